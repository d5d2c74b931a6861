import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Aggregation, aggregate } from './aggregation.js';
import type { Backend, Diagnostic } from './backend.js';
import { type DomainType, domainName, isNestedDomain, isValidDomain } from './domains.js';
import { errorMessage, InvalidArgumentError, JoulegateError } from './errors.js';
import { formatValue } from './format.js';
import { makeDirs } from './make-dirs.js';
import type { NativeRead, NativeSignal } from './native-read.js';
import type { ControlInfo, SavedControl, SignalInfo } from './signal-info.js';
import type { Topology } from './topology.js';

interface SignalHandle {
  backend: Backend;
  handles: number[];
  aggregation: Aggregation;
}

interface ControlHandle {
  /** The request as pushed, for messages. */
  request: string;
  backend: Backend;
  handles: number[];
  /** Each native control gets value / divisor (sum-aggregated controls such as power limits). */
  divisor: number;
}

/** In adjustedBy: a native control that more than one request has set (none may change it alone). */
const SEVERAL = -1;

/** File name of one backend's saved controls inside a save directory (GEOPM's layout). */
export function saveFileName(backendName: string): string {
  return `${backendName}-save-control.json`;
}

/**
 * Routes signal and control requests to backends and converts between domains. Backends
 * registered later win; an earlier backend offering the same name serves as fallback when the
 * later one cannot serve a request.
 */
/** Whether `b` offers the signal or control `name`. */
function serves(b: Backend, name: string, kind: 'signal' | 'control'): boolean {
  return kind === 'signal' ? b.isValidSignal(name) : b.isValidControl(name);
}

export class PlatformIO {
  readonly topology: Topology;
  private readonly backends: Backend[] = [];
  private readonly missing: Diagnostic[] = [];
  /** candidates() by name (see there). */
  private readonly signalServers = new Map<string, readonly Backend[]>();
  private readonly controlServers = new Map<string, readonly Backend[]>();
  private signalHandles: SignalHandle[] = [];
  private controlHandles: ControlHandle[] = [];
  /** No more pushes: set by the first readBatch() or adjust(). */
  private frozen = false;
  /** sample() allowed: set by the first readBatch() only. */
  private readDone = false;
  /** Backends holding pushed signals, known once pushes are frozen. */
  private batchBackends?: Backend[];
  /**
   * Per backend, per native control handle: the request that adjusted it since the last
   * writeBatch() and the setting it gave. Two requests naming one native control (a duplicate,
   * an alias, a CPU inside a package request) must agree, or one of them would be acknowledged
   * without being applied.
   */
  private readonly adjustedBy = new Map<Backend, Map<number, number>>();
  private readonly adjustedTo = new Map<Backend, Map<number, number>>();
  /** Backends whose part of the last readBatch() failed, with the error. */
  private readonly failedBackends = new Map<Backend, Error>();

  constructor(topology: Topology) {
    this.topology = topology;
  }

  register(backend: Backend): void {
    this.backends.push(backend);
    this.signalServers.clear();
    this.controlServers.clear();
  }

  /** Records a backend that could not be loaded, with the reason, for listings. */
  recordMissing(diag: Diagnostic): void {
    this.missing.push(diag);
  }

  loadedBackends(): readonly Backend[] {
    return this.backends;
  }

  /** Missing backends and unreadable signals, each with its reason. */
  diagnostics(): Diagnostic[] {
    return [...this.missing, ...this.backends.flatMap((b) => b.diagnostics())];
  }

  /**
   * The backends that serve `name`, last registered first. Kept per name once found (the names
   * a backend serves are fixed once it is set up), and only for names some backend serves, so
   * the maps stay as small as the node's name lists.
   */
  private candidates(name: string, kind: 'signal' | 'control'): readonly Backend[] {
    const known = kind === 'signal' ? this.signalServers : this.controlServers;
    const found = known.get(name);
    if (found) return found;
    const servers = this.backends.filter((b) => serves(b, name, kind)).reverse();
    if (servers.length > 0) known.set(name, servers);
    return servers;
  }

  /** The first of candidates(): the backend that serves `name`. */
  private firstCandidate(name: string, kind: 'signal' | 'control'): Backend | undefined {
    return this.candidates(name, kind)[0];
  }

  signalNames(): string[] {
    return [...new Set(this.backends.flatMap((b) => b.signalNames()))].sort();
  }

  controlNames(): string[] {
    return [...new Set(this.backends.flatMap((b) => b.controlNames()))].sort();
  }

  isValidSignal(name: string): boolean {
    return this.firstCandidate(name, 'signal') !== undefined;
  }

  isValidControl(name: string): boolean {
    return this.firstCandidate(name, 'control') !== undefined;
  }

  /** The backend that serves a signal (the last registered that has it), if any. */
  signalBackend(name: string): Backend | undefined {
    return this.firstCandidate(name, 'signal');
  }

  signalInfo(name: string): SignalInfo {
    const b = this.signalBackend(name);
    if (!b) throw new InvalidArgumentError(`no support for signal ${name}`);
    return b.signalInfo(name);
  }

  controlInfo(name: string): ControlInfo {
    const b = this.firstCandidate(name, 'control');
    if (!b) throw new InvalidArgumentError(`no support for control ${name}`);
    return b.controlInfo(name);
  }

  formatSignal(name: string, value: number): string {
    return formatValue(this.signalInfo(name).format, value);
  }

  /** Native indices that make up (domain, idx) for a request whose native domain is `native`. */
  private nativeIndices(name: string, native: DomainType, domain: DomainType, idx: number): number[] {
    if (!isValidDomain(domain)) throw new InvalidArgumentError(`invalid domain type ${domain} for ${name}`);
    this.topology.checkIndex(domain, idx);
    if (!isNestedDomain(native, domain)) {
      throw new InvalidArgumentError(
        `${name}: native domain ${domainName(native)} is not within ${domainName(domain)}; ` +
          `read it at ${domainName(native)} or a domain that contains it`,
      );
    }
    const indices = this.topology.nested(native, domain, idx);
    if (indices.length === 0) {
      throw new InvalidArgumentError(
        `${name}: ${domainName(domain)} ${idx} contains no ${domainName(native)}`,
      );
    }
    return indices;
  }

  /**
   * The native indices a signal read at (domain, idx) needs. select_first keeps only the first
   * value, so only the first is read: TIME at board is one read, not one per cpu.
   */
  private signalIndices(name: string, info: SignalInfo, domain: DomainType, idx: number): number[] {
    const natives = this.nativeIndices(name, info.domain, domain, idx);
    return info.aggregation === Aggregation.SelectFirst ? natives.slice(0, 1) : natives;
  }

  /** Tries each candidate backend in priority order; reports all failures if none serves. */
  private firstThatServes<T>(name: string, kind: 'signal' | 'control', attempt: (b: Backend) => T): T {
    const cands = this.candidates(name, kind);
    if (cands.length === 0) throw new InvalidArgumentError(`no support for ${kind} ${name}`);
    const errors: unknown[] = [];
    for (const b of cands) {
      try {
        return attempt(b);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length === 1) throw errors[0];
    throw new InvalidArgumentError(errors.map(errorMessage).join('; '));
  }

  private async firstThatServesAsync<T>(
    name: string,
    kind: 'signal' | 'control',
    attempt: (b: Backend) => Promise<T>,
  ): Promise<T> {
    const cands = this.candidates(name, kind);
    if (cands.length === 0) throw new InvalidArgumentError(`no support for ${kind} ${name}`);
    // One backend (the usual case): its own answer or its own error, as the loop would give.
    if (cands.length === 1) return attempt(cands[0]!);
    const errors: unknown[] = [];
    for (const b of cands) {
      try {
        return await attempt(b);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length === 1) throw errors[0];
    throw new JoulegateError(errors.map(errorMessage).join('; '));
  }

  /**
   * Why a signal read at (domain, idx) has no value on this node, undefined when it has one:
   * every native index inside must exist (a sum missing one package would understate). The one
   * availability answer monitor, sensors, exporter, top and session share.
   */
  whyUnavailable(name: string, domain: DomainType, idx: number): string | undefined {
    const backend = this.signalBackend(name);
    if (!backend) return `no backend offers ${name}`;
    const info = backend.signalInfo(name);
    let natives: number[];
    try {
      natives = this.signalIndices(name, info, domain, idx);
    } catch (err) {
      return errorMessage(err);
    }
    for (const native of natives) {
      if (backend.isSignalAvailable?.(name, native) === false) {
        return (
          backend.whyUnavailable?.(name, native) ?? `not present at ${domainName(info.domain)} ${native}`
        );
      }
    }
    return undefined;
  }

  pushSignal(name: string, domain: DomainType, idx: number): number {
    if (this.frozen) throw new JoulegateError('cannot push a signal after readBatch() or adjust()');
    const handle = this.firstThatServes(name, 'signal', (b) => {
      const info = b.signalInfo(name);
      const natives = this.signalIndices(name, info, domain, idx);
      const handles = natives.map((i) => b.pushSignal(name, info.domain, i));
      return { backend: b, handles, aggregation: info.aggregation };
    });
    this.signalHandles.push(handle);
    return this.signalHandles.length - 1;
  }

  pushControl(name: string, domain: DomainType, idx: number): number {
    if (this.frozen) throw new JoulegateError('cannot push a control after readBatch() or adjust()');
    const handle = this.firstThatServes(name, 'control', (b) => {
      const info = b.controlInfo(name);
      const natives = this.nativeIndices(name, info.domain, domain, idx);
      const handles = natives.map((i) => b.pushControl(name, info.domain, i));
      const divisor = info.aggregation === Aggregation.Sum ? natives.length : 1;
      return { request: `${name} ${domainName(domain)} ${idx}`, backend: b, handles, divisor };
    });
    if (!this.adjustedBy.has(handle.backend)) {
      this.adjustedBy.set(handle.backend, new Map());
      this.adjustedTo.set(handle.backend, new Map());
    }
    this.controlHandles.push(handle);
    return this.controlHandles.length - 1;
  }

  numSignalPushed(): number {
    return this.signalHandles.length;
  }

  numControlPushed(): number {
    return this.controlHandles.length;
  }

  private backendsWith(handles: readonly { backend: Backend }[]): Backend[] {
    return [...new Set(handles.map((h) => h.backend))];
  }

  async readBatch(): Promise<void> {
    await this.readBatchNow();
  }

  /**
   * readBatch() for a loop that samples often (the batch server): when every backend read
   * synchronously it returns undefined, without a promise or a microtask; else the promise of
   * the rest. Throws (or rejects) as readBatch() does.
   */
  readBatchNow(): Promise<void> | undefined {
    this.frozen = true;
    this.readDone = true;
    // Pushes are closed from here on, so the backends to read are fixed: found once, not per
    // batch (the batch server calls this thousands of times a second).
    if (this.batchBackends === undefined) this.batchBackends = this.backendsWith(this.signalHandles);
    const backends = this.batchBackends;
    if (this.failedBackends.size > 0) this.failedBackends.clear();
    // One backend failing (the daemon gone) must not take the others' values with it: they
    // are read, its signals sample as NaN with its error (sampleError), and the batch throws.
    let pending: Promise<void>[] | undefined;
    for (const b of backends) {
      try {
        const reading = b.readBatch();
        if (reading) {
          pending ??= [];
          pending.push(reading.catch((err) => this.recordFailure(b, err)));
        }
      } catch (err) {
        this.recordFailure(b, err);
      }
    }
    if (pending) return Promise.all(pending).then(() => this.throwFailures());
    this.throwFailures();
    return undefined;
  }

  private recordFailure(backend: Backend, err: unknown): void {
    this.failedBackends.set(backend, asError(err));
  }

  /** Throws the batch's failure: a failed backend's error, or one naming each of several. */
  private throwFailures(): void {
    if (this.failedBackends.size === 0) return;
    const errors = [...this.failedBackends.values()];
    if (errors.length === 1) throw errors[0];
    throw new JoulegateError(errors.map(errorMessage).join('; '));
  }

  sample(handle: number): number {
    const h = this.signalHandles[handle];
    if (!h) throw new InvalidArgumentError(`invalid signal handle ${handle}`);
    if (!this.readDone) throw new JoulegateError('sample() called before readBatch()');
    if (this.failedBackends.size > 0 && this.failedBackends.has(h.backend)) return Number.NaN;
    if (h.handles.length === 1) return h.backend.sample(h.handles[0]!);
    return aggregate(
      h.aggregation,
      h.handles.map((x) => h.backend.sample(x)),
    );
  }

  /**
   * The native loop's reads for pushed signal `handle` (src/batch/native-loop.c), or undefined
   * when any of its native reads has none: the batch then samples in JavaScript.
   */
  nativeSignal(handle: number): NativeSignal | undefined {
    const h = this.signalHandles[handle];
    if (!h) throw new InvalidArgumentError(`invalid signal handle ${handle}`);
    const reads: NativeRead[] = [];
    for (const x of h.handles) {
      const read = h.backend.nativeRead?.(x);
      if (!read) return undefined;
      reads.push(read);
    }
    return { aggregation: h.aggregation, reads };
  }

  /**
   * Why sample(handle) is NaN after the last readBatch(): the first error of the native reads
   * behind it, or undefined when it has a value or the backend gave no reason.
   */
  sampleError(handle: number): Error | undefined {
    const h = this.signalHandles[handle];
    if (!h) throw new InvalidArgumentError(`invalid signal handle ${handle}`);
    const failed = this.failedBackends.get(h.backend);
    if (failed) return failed;
    for (const x of h.handles) {
      const err = h.backend.sampleError?.(x);
      if (err) return err;
    }
    return undefined;
  }

  /**
   * Sets a pushed control for the next writeBatch(); adjusting the same request again replaces
   * its setting. Requests that share a native control must give it the same setting before the
   * next writeBatch(), else InvalidArgumentError (this request's setting is not taken).
   */
  adjust(handle: number, value: number): void {
    const h = this.controlHandles[handle];
    if (!h) throw new InvalidArgumentError(`invalid control handle ${handle}`);
    if (!Number.isFinite(value)) throw new InvalidArgumentError(`cannot adjust a control to ${value}`);
    this.frozen = true;
    const native = value / h.divisor;
    const by = this.adjustedBy.get(h.backend)!;
    const to = this.adjustedTo.get(h.backend)!;
    for (const x of h.handles) {
      const other = by.get(x);
      if (other !== undefined && other !== handle && to.get(x) !== native) {
        const whom = other === SEVERAL ? 'other requests' : this.controlHandles[other]!.request;
        throw new InvalidArgumentError(
          `${h.request} and ${whom} set the same control to different values (${native}, ${to.get(x)}) in one batch`,
        );
      }
    }
    for (const x of h.handles) {
      const other = by.get(x);
      by.set(x, other === undefined || other === handle ? handle : SEVERAL);
      to.set(x, native);
      h.backend.adjust(x, native);
    }
  }

  async writeBatch(): Promise<void> {
    for (const by of this.adjustedBy.values()) by.clear();
    for (const to of this.adjustedTo.values()) to.clear();
    for (const b of this.backendsWith(this.controlHandles)) await b.writeBatch();
  }

  async readSignal(name: string, domain: DomainType, idx: number): Promise<number> {
    const servers = this.candidates(name, 'signal');
    // One backend (the usual case) is read directly: its own answer or its own error.
    if (servers.length === 1) return this.readFrom(servers[0]!, name, domain, idx);
    return this.firstThatServesAsync(name, 'signal', (b) => this.readFrom(b, name, domain, idx));
  }

  private readFrom(b: Backend, name: string, domain: DomainType, idx: number): Promise<number> {
    const info = b.signalInfo(name);
    const natives = this.signalIndices(name, info, domain, idx);
    if (natives.length === 1) return b.readSignal(name, info.domain, natives[0]!);
    return Promise.all(natives.map((i) => b.readSignal(name, info.domain, i))).then((values) =>
      aggregate(info.aggregation, values),
    );
  }

  async writeControl(name: string, domain: DomainType, idx: number, value: number): Promise<void> {
    if (!Number.isFinite(value)) throw new InvalidArgumentError(`invalid value ${value} for control ${name}`);
    await this.firstThatServesAsync(name, 'control', async (b) => {
      const info = b.controlInfo(name);
      const natives = this.nativeIndices(name, info.domain, domain, idx);
      const divisor = info.aggregation === Aggregation.Sum ? natives.length : 1;
      for (const i of natives) await b.writeControl(name, info.domain, i, value / divisor);
    });
  }

  /** Saves every control of every backend, one JSON file per backend, written atomically. */
  async saveControls(dir: string): Promise<void> {
    makeDirs(dir, 0o700);
    for (const b of this.backends) {
      const settings = await b.saveControls();
      const file = join(dir, saveFileName(b.name));
      const tmp = `${file}.tmp-${process.pid}`;
      writeFileSync(tmp, `${JSON.stringify(settings, null, 1)}\n`, { mode: 0o600 });
      renameSync(tmp, file);
    }
  }

  /**
   * Restores every backend's file in `dir`; a failing backend (or a missing/garbled file) does
   * not stop the others. Throws one error naming every failure.
   */
  async restoreControls(dir: string): Promise<void> {
    const failures: string[] = [];
    const byName = new Map(this.backends.map((b) => [b.name, b]));
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch (err) {
      throw new JoulegateError(
        `restore failed: cannot read the saved controls in ${dir}: ${errorMessage(err)}`,
      );
    }
    const files = entries.filter((f) => f.endsWith('-save-control.json'));
    for (const file of files.sort()) {
      const backendName = file.slice(0, -'-save-control.json'.length);
      const b = byName.get(backendName);
      if (!b) {
        failures.push(`${backendName}: backend not loaded, cannot restore ${file}`);
        continue;
      }
      try {
        const settings = parseSavedControls(readFileSync(join(dir, file), 'utf8'), file);
        await b.restoreControls(settings);
      } catch (err) {
        failures.push(errorMessage(err));
      }
    }
    if (failures.length > 0) throw new JoulegateError(`restore failed: ${failures.join(' | ')}`);
  }

  async close(): Promise<void> {
    for (const b of [...this.backends].reverse()) {
      try {
        await b.close();
      } catch {
        // closing is best effort: one backend failing to close must not keep others open
      }
    }
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new JoulegateError(String(err));
}

/** Validates a saved-controls file (GEOPM's saved_controls schema). */
export function parseSavedControls(text: string, what: string): SavedControl[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new JoulegateError(`${what}: not valid JSON`);
  }
  if (!Array.isArray(data)) throw new JoulegateError(`${what}: expected a JSON array`);
  return data.map((e, i) => {
    const ok =
      e !== null &&
      typeof e === 'object' &&
      typeof e.name === 'string' &&
      Number.isInteger(e.domain_type) &&
      Number.isInteger(e.domain_idx) &&
      typeof e.setting === 'number';
    if (!ok) throw new JoulegateError(`${what}: entry ${i} is not {name, domain_type, domain_idx, setting}`);
    return { name: e.name, domain_type: e.domain_type, domain_idx: e.domain_idx, setting: e.setting };
  });
}
