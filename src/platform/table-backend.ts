import type { Backend, BackendContext, Diagnostic } from './backend.js';
import { type DomainType, domainName } from './domains.js';
import { errorMessage, InvalidArgumentError, JoulegateError } from './errors.js';
import type { NativeRead } from './native-read.js';
import type { ControlInfo, SavedControl, SignalInfo, SignalSpec } from './signal-info.js';
import type { Topology } from './topology.js';

/** A snapshot taken once per batch plus the previous one, for signals that are rates. */
export interface ReadContext<S> {
  current: S;
  previous: S | undefined;
  /** Seconds between the two snapshots (NaN when there is no previous one). */
  elapsed: number;
}

export interface SignalDef<S> extends SignalSpec {
  /** Low-level name without the backend prefix, e.g. `CPU_UTILIZATION`. */
  name: string;
  /** High-level names that stand for this one (`CPU_ENERGY`). */
  aliases?: string[];
  /** Value at native index `idx`; NaN or a throw means "no value this time". */
  read(idx: number, ctx: ReadContext<S>): number;
  /** True if the value is a rate over two snapshots: a single read measures over `rateWindow`. */
  rate?: boolean;
  /**
   * The native loop's read of this signal at native index `idx` (see Backend.nativeRead), where
   * `read` is exactly that; absent or undefined: JavaScript reads it.
   */
  native?(idx: number): NativeRead | undefined;
  /** Indices where this signal exists (default: all of its domain). */
  available?(idx: number): boolean;
  /** Why it does not exist at an index `available` refuses (`no RAPL zone for package 1`). */
  whyUnavailable?(idx: number): string;
}

export interface ControlDef<S> extends SignalDef<S> {
  /** Applies a setting at native index `idx`; throws a clear error for a bad value. */
  write(idx: number, value: number): void | Promise<void>;
}

interface Pushed<S> {
  def: SignalDef<S>;
  idx: number;
}

interface PushedControl<S> {
  def: ControlDef<S>;
  idx: number;
  value: number;
  dirty: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Generic machinery for backends described by tables of signals and controls: names, aliases,
 * push/readBatch/sample, adjust/writeBatch, single reads (with a measurement window for rates),
 * save/restore. A backend supplies its definitions and one `snapshot()` that reads the hardware
 * once per batch.
 */
export abstract class TableBackend<S> implements Backend {
  abstract readonly id: string;
  abstract readonly name: string;
  abstract readonly description: string;
  /** Seconds a single read of a rate signal measures over; stated in --info. */
  protected rateWindow = 0.1;
  protected topology!: Topology;
  protected ctx!: BackendContext;
  private signals = new Map<string, SignalDef<S>>();
  private controls = new Map<string, ControlDef<S>>();
  private aliasOf = new Map<string, string>();
  private readonly signalInfos = new Map<string, SignalInfo>();
  private pushed: Pushed<S>[] = [];
  private pushedControls: PushedControl<S>[] = [];
  private values = new Float64Array(0);
  /** Per pushed signal: the error that made its last batch value NaN. */
  private errors: (Error | undefined)[] = [];
  private previous: { snap: S; time: number } | undefined;
  /** No more pushes: set by the first readBatch() or adjust(). */
  private frozen = false;
  /** sample() allowed: set by the first readBatch() only (an adjust() reads nothing). */
  private batchRead = false;
  protected problems: Diagnostic[] = [];
  /** High-level name → full name of a signal left out with a reason (see omitSignal). */
  private readonly omittedAliases = new Map<string, string>();

  /** Monotonic seconds at which a batch snapshot was taken (rates divide by their difference). */
  protected clockSeconds(): number {
    return performance.now() / 1000;
  }

  /** Reads what the pushed requests need (e.g. /proc/stat once); `requests` may be empty. */
  protected abstract snapshot(requests: readonly { def: SignalDef<S>; idx: number }[]): S | Promise<S>;
  /** Builds the signal and control tables; called by setup() once the context is known. */
  protected abstract define(ctx: BackendContext):
    | {
        signals: SignalDef<S>[];
        controls?: ControlDef<S>[];
      }
    | Promise<{ signals: SignalDef<S>[]; controls?: ControlDef<S>[] }>;

  metadata(): Record<string, unknown> {
    return {};
  }

  async setup(ctx: BackendContext): Promise<void> {
    this.ctx = ctx;
    this.topology = ctx.topology;
    const { signals, controls = [] } = await this.define(ctx);
    for (const def of signals) this.addSignal(def);
    for (const def of controls) {
      this.controls.set(this.fullName(def.name), def);
      // Every control can be read as a signal of the same name.
      if (!this.signals.has(this.fullName(def.name))) this.addSignal(def);
      for (const alias of def.aliases ?? []) this.aliasOf.set(alias, this.fullName(def.name));
    }
  }

  private addSignal(def: SignalDef<S>): void {
    this.signals.set(this.fullName(def.name), def);
    for (const alias of def.aliases ?? []) this.aliasOf.set(alias, this.fullName(def.name));
  }

  async close(): Promise<void> {}

  protected fullName(short: string): string {
    return `${this.name}::${short}`;
  }

  private resolve(name: string): string {
    return this.aliasOf.get(name) ?? name;
  }

  private aliasesOf(map: Map<string, SignalDef<S>>): string[] {
    return [...this.aliasOf.entries()].filter(([, target]) => map.has(target)).map(([a]) => a);
  }

  signalNames(): string[] {
    return [...this.signals.keys(), ...this.aliasesOf(this.signals)].sort();
  }

  controlNames(): string[] {
    return [...this.controls.keys(), ...this.aliasesOf(this.controls as Map<string, SignalDef<S>>)].sort();
  }

  isValidSignal(name: string): boolean {
    return this.signals.has(this.resolve(name));
  }

  isValidControl(name: string): boolean {
    return this.controls.has(this.resolve(name));
  }

  isSignalAvailable(name: string, idx: number): boolean {
    const def = this.signalDef(name);
    return def.available ? def.available(idx) : true;
  }

  whyUnavailable(name: string, idx: number): string | undefined {
    return this.unavailableReason(this.signalDef(name), idx);
  }

  private unavailableReason(def: SignalDef<S>, idx: number): string | undefined {
    if (!def.available || def.available(idx)) return undefined;
    return def.whyUnavailable?.(idx) ?? `not present at ${domainName(def.domain)} ${idx}`;
  }

  diagnostics(): Diagnostic[] {
    return [...this.problems];
  }

  /** Leaves a signal undefined on this node with the reason, found by its aliases too. */
  protected omitSignal(short: string, aliases: readonly string[], reason: string): void {
    const signal = this.fullName(short);
    this.problems.push({ backend: this.name, signal, reason });
    for (const alias of aliases) this.omittedAliases.set(alias, signal);
  }

  whyNotServed(name: string): string | undefined {
    const signal = this.omittedAliases.get(name) ?? name;
    return this.problems.find((d) => d.signal === signal)?.reason;
  }

  private info(name: string, def: SignalDef<S>): SignalInfo {
    const low = this.resolve(name);
    let description = def.description;
    if (def.rate) description += ` (a single read measures over ${this.rateWindow} s)`;
    return {
      name,
      description,
      domain: def.domain,
      aggregation: def.aggregation,
      format: def.format,
      behavior: def.behavior,
      units: def.units,
      ...(def.outsidePlatform ? { outsidePlatform: true } : {}),
      ...(def.feeds !== undefined ? { feeds: def.feeds } : {}),
      ...(def.counterRange !== undefined ? { counterRange: def.counterRange } : {}),
      backend: this.name,
      ...(low !== name ? { aliasFor: low } : {}),
    };
  }

  /**
   * One object per name asked for (only names this backend serves, so the map is bounded):
   * the daemon's read path asks for each call.
   */
  signalInfo(name: string): SignalInfo {
    let info = this.signalInfos.get(name);
    if (!info) {
      info = Object.freeze(this.info(name, this.signalDef(name)));
      this.signalInfos.set(name, info);
    }
    return info;
  }

  controlInfo(name: string): ControlInfo {
    return this.info(name, this.controlDef(name));
  }

  protected signalDef(name: string): SignalDef<S> {
    const def = this.signals.get(this.resolve(name));
    if (!def) throw new InvalidArgumentError(`${this.name}: unknown signal "${name}"`);
    return def;
  }

  protected controlDef(name: string): ControlDef<S> {
    const def = this.controls.get(this.resolve(name));
    if (!def) throw new InvalidArgumentError(`${this.name}: unknown control "${name}"`);
    return def;
  }

  private checkNative(def: SignalDef<S>, name: string, domain: DomainType, idx: number): void {
    if (domain !== def.domain) {
      throw new InvalidArgumentError(
        `${name}: native domain is ${domainName(def.domain)}, not ${domainName(domain)}`,
      );
    }
    this.topology.checkIndex(domain, idx);
    const why = this.unavailableReason(def, idx);
    if (why !== undefined) {
      throw new InvalidArgumentError(`${name} is not available at ${domainName(domain)} ${idx}: ${why}`);
    }
  }

  pushSignal(name: string, domain: DomainType, idx: number): number {
    const def = this.signalDef(name);
    this.checkNative(def, name, domain, idx);
    const existing = this.pushed.findIndex((p) => p.def === def && p.idx === idx);
    if (existing >= 0) return existing;
    if (this.frozen) throw new JoulegateError(`${this.name}: cannot push a signal after readBatch()`);
    this.pushed.push({ def, idx });
    this.values = new Float64Array(this.pushed.length).fill(Number.NaN);
    return this.pushed.length - 1;
  }

  pushControl(name: string, domain: DomainType, idx: number): number {
    const def = this.controlDef(name);
    this.checkNative(def, name, domain, idx);
    const existing = this.pushedControls.findIndex((p) => p.def === def && p.idx === idx);
    if (existing >= 0) return existing;
    if (this.frozen) throw new JoulegateError(`${this.name}: cannot push a control after readBatch()`);
    this.pushedControls.push({ def, idx, value: Number.NaN, dirty: false });
    return this.pushedControls.length - 1;
  }

  /**
   * The value of pushed signal `i` in this batch. A throw is kept as the handle's error (NaN
   * with a reason). A rate over an interval in which no time passed has no new value yet: the
   * previous value stands (NaN before the first), which is no failure.
   */
  private evaluate(i: number, ctx: ReadContext<S>): void {
    const { def, idx } = this.pushed[i]!;
    this.errors[i] = undefined;
    if (def.rate && ctx.previous === undefined) {
      this.values[i] = Number.NaN;
      return;
    }
    if (def.rate && !(ctx.elapsed > 0)) return;
    try {
      this.values[i] = def.read(idx, ctx);
    } catch (err) {
      this.values[i] = Number.NaN;
      this.errors[i] = err instanceof Error ? err : new JoulegateError(String(err));
    }
  }

  /** The read context of a batch whose snapshot is `snap`; keeps it as the next one's previous. */
  private record(snap: S): ReadContext<S> {
    const time = this.clockSeconds();
    const prev = this.previous;
    // A batch in which no time passed starts no interval: rates keep measuring from `prev`.
    if (!prev || time > prev.time) this.previous = { snap, time };
    return { current: snap, previous: prev?.snap, elapsed: prev ? time - prev.time : Number.NaN };
  }

  private evaluateAll(snap: S): void {
    const ctx = this.record(snap);
    for (let i = 0; i < this.pushed.length; i++) this.evaluate(i, ctx);
  }

  /** Synchronous (no promise) when snapshot() is. */
  readBatch(): void | Promise<void> {
    this.frozen = true;
    this.batchRead = true;
    if (this.pushed.length === 0) return;
    const snap = this.snapshot(this.pushed);
    if (snap instanceof Promise) return snap.then((s) => this.evaluateAll(s));
    this.evaluateAll(snap as S);
  }

  sample(handle: number): number {
    if (!this.batchRead) throw new JoulegateError(`${this.name}: sample() called before readBatch()`);
    if (!Number.isInteger(handle) || handle < 0 || handle >= this.pushed.length) {
      throw new InvalidArgumentError(`${this.name}: invalid signal handle ${handle}`);
    }
    return this.values[handle]!;
  }

  sampleError(handle: number): Error | undefined {
    return this.errors[handle];
  }

  nativeRead(handle: number): NativeRead | undefined {
    const p = this.pushed[handle];
    // A rate needs the previous snapshot, which only the JavaScript read keeps.
    if (!p || p.def.rate) return undefined;
    return p.def.native?.(p.idx);
  }

  adjust(handle: number, value: number): void {
    const p = this.pushedControls[handle];
    if (!p) throw new InvalidArgumentError(`${this.name}: invalid control handle ${handle}`);
    if (!Number.isFinite(value)) throw new InvalidArgumentError(`${this.name}: cannot adjust to ${value}`);
    p.value = value;
    p.dirty = true;
    this.frozen = true;
  }

  async writeBatch(): Promise<void> {
    for (const p of this.pushedControls) {
      if (!p.dirty) continue;
      await p.def.write(p.idx, p.value);
      p.dirty = false;
    }
  }

  async readSignal(name: string, domain: DomainType, idx: number): Promise<number> {
    const def = this.signalDef(name);
    this.checkNative(def, name, domain, idx);
    const request = [{ def, idx }];
    // No microtask where the snapshot is synchronous (most are).
    const taken = this.snapshot(request);
    const first = taken instanceof Promise ? await taken : taken;
    if (!def.rate) {
      return this.evaluateOnce(def, idx, { current: first, previous: undefined, elapsed: Number.NaN });
    }
    const t0 = performance.now();
    await sleep(this.rateWindow * 1000);
    const second = await this.snapshot(request);
    const elapsed = (performance.now() - t0) / 1000;
    return this.evaluateOnce(def, idx, { current: second, previous: first, elapsed });
  }

  /** Like evaluate(), but an explicit single read reports why it failed. */
  private evaluateOnce(def: SignalDef<S>, idx: number, ctx: ReadContext<S>): number {
    return def.read(idx, ctx);
  }

  async writeControl(name: string, domain: DomainType, idx: number, value: number): Promise<void> {
    const def = this.controlDef(name);
    this.checkNative(def, name, domain, idx);
    if (!Number.isFinite(value)) throw new InvalidArgumentError(`${name}: invalid value ${value}`);
    await def.write(idx, value);
  }

  /**
   * Reads every control at every available index. A setting that cannot be read fails the save
   * (naming each one): a save that left it out would let restore silently skip it.
   */
  async saveControls(): Promise<SavedControl[]> {
    const out: SavedControl[] = [];
    const failures: string[] = [];
    for (const [name, def] of this.controls) {
      const n = this.topology.numDomain(def.domain);
      for (let idx = 0; idx < n; idx++) {
        if (def.available && !def.available(idx)) continue;
        const where = `${name} ${domainName(def.domain)} ${idx}`;
        try {
          const setting = await this.readSignal(name, def.domain, idx);
          if (Number.isFinite(setting)) out.push({ name, domain_type: def.domain, domain_idx: idx, setting });
          else failures.push(`${where}: read ${setting}`);
        } catch (err) {
          failures.push(`${where}: ${errorMessage(err)}`);
        }
      }
    }
    if (failures.length > 0) throw new JoulegateError(`${this.name}: cannot save ${failures.join('; ')}`);
    return out;
  }

  async restoreControls(settings: readonly SavedControl[]): Promise<void> {
    const failures: string[] = [];
    for (const s of settings) {
      try {
        await this.writeControl(s.name, s.domain_type, s.domain_idx, s.setting);
      } catch (err) {
        failures.push(`${s.name} ${domainName(s.domain_type)} ${s.domain_idx}: ${errorMessage(err)}`);
      }
    }
    if (failures.length > 0) {
      throw new JoulegateError(
        `${this.name}: failed to restore ${failures.length} setting(s): ${failures.join('; ')}`,
      );
    }
  }
}
