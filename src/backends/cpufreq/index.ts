import { writeFileSync } from 'node:fs';
import type { BackendContext } from '../../platform/backend.js';
import { DomainType as Domain, type DomainType } from '../../platform/domains.js';
import { InvalidArgumentError, JoulegateError } from '../../platform/errors.js';
import type { NativeRead } from '../../platform/native-read.js';
import { Behavior } from '../../platform/signal-info.js';
import { wrapIoError } from '../../platform/sysroot.js';
import {
  type ControlDef,
  type ReadContext,
  type SignalDef,
  TableBackend,
} from '../../platform/table-backend.js';
import { attempt, type Outcome, unwrap } from '../polled-file.js';
import { BackendUnavailableError, registerBackend } from '../registry.js';
import { RequestPlan } from '../request-plan.js';
import { SysfsNumberFile } from '../sysfs-reader.js';
import { CPUFREQ_ATTRIBUTES, type SysfsAttribute } from './attributes.js';
import { CPU_DIR, CPUFREQ_DIR, discoverPolicies, type Policy, parseSysfsNumber } from './parse.js';

/** Values of the polled (non-constant) files read in one batch, by slot = attribute × policy. */
interface FreqSnapshot {
  values: Float64Array;
  errors: (Error | undefined)[];
}

type Request = { def: SignalDef<FreqSnapshot>; idx: number };

interface StagedWrite {
  path: string;
  label: string;
  text: string;
  /** The CPU whose setting this is (the policy's other CPUs must agree in one batch). */
  cpu: number;
}

/**
 * cpufreq policies as signals and controls on the cpu domain, driven by the CPUFREQ_ATTRIBUTES
 * table. Each policy file is read once per batch however many of its CPUs are pushed, and
 * written once per batch however many of its CPUs are adjusted.
 */
export class CpufreqBackend extends TableBackend<FreqSnapshot> {
  readonly id = 'cpufreq';
  readonly name = 'CPUFREQ';
  readonly description = 'CPU frequency limits and status from sysfs cpufreq policies';
  private policies: Policy[] = [];
  private policyOfCpu = new Int32Array(0);
  private attributes: SysfsAttribute[] = [];
  private attrByName = new Map<string, number>();
  /** present[a][p]: policy p has attribute a. */
  private present: boolean[][] = [];
  /** Constant attributes, read once at setup: constants[a][p]. */
  private constants: Outcome<number>[][] = [];
  /** Open attribute files by slot, opened on first use and kept open (pread per batch). */
  private files: (SysfsNumberFile | undefined)[] = [];
  private staged = new Map<number, StagedWrite>();
  /** Polled (attribute × policy) slots the requests need, each read once per batch. */
  private readonly slots = new RequestPlan<Request, number[]>((requests) => this.slotsFor(requests));

  constructor(policies: Policy[]) {
    super();
    this.policies = policies;
  }

  protected define(ctx: BackendContext): {
    signals: SignalDef<FreqSnapshot>[];
    controls: ControlDef<FreqSnapshot>[];
  } {
    const root = ctx.sysroot;
    this.policyOfCpu = new Int32Array(this.topology.numDomain(Domain.Cpu)).fill(-1);
    this.policies.forEach((p, i) => {
      for (const cpu of p.cpus) if (cpu < this.policyOfCpu.length) this.policyOfCpu[cpu] = i;
    });
    const signals: SignalDef<FreqSnapshot>[] = [];
    const controls: ControlDef<FreqSnapshot>[] = [];
    for (const attr of CPUFREQ_ATTRIBUTES) {
      const present = this.policies.map((p) => root.exists(`${p.dir}/${attr.attribute}`));
      if (!present.some(Boolean)) continue;
      const a = this.attributes.length;
      this.attributes.push(attr);
      this.present.push(present);
      this.constants.push(
        attr.behavior === Behavior.Constant
          ? this.policies.map((p) => attempt(() => this.readFile(`${p.dir}/${attr.attribute}`)))
          : [],
      );
      const def = this.defineAttribute(attr, a);
      this.attrByName.set(attr.name, a);
      if (attr.writeable) controls.push({ ...def, write: (cpu, value) => this.stage(a, cpu, value) });
      else signals.push(def);
      const unreadable = this.policies.find(
        (p, i) => present[i] && !root.readable(`${p.dir}/${attr.attribute}`),
      );
      if (unreadable) {
        this.problems.push({
          backend: this.name,
          signal: `${this.name}::${attr.name}`,
          reason: `${unreadable.dir}/${attr.attribute}: permission denied`,
        });
      }
    }
    return { signals, controls };
  }

  private defineAttribute(attr: SysfsAttribute, a: number): SignalDef<FreqSnapshot> {
    return {
      name: attr.name,
      aliases: attr.alias ? [attr.alias] : [],
      description: `${attr.description} (${CPUFREQ_DIR}/policy*/${attr.attribute} or ${CPU_DIR}/cpu*/cpufreq/${attr.attribute})`,
      domain: Domain.Cpu,
      aggregation: attr.aggregation,
      format: attr.format,
      behavior: attr.behavior,
      units: attr.units,
      available: (cpu) => this.policyIndex(cpu) >= 0 && this.present[a]![this.policyIndex(cpu)]!,
      whyUnavailable: (cpu) => {
        const policy = this.policies[this.policyIndex(cpu)];
        return policy ? `${policy.dir}/${attr.attribute} is missing` : `no cpufreq policy governs cpu ${cpu}`;
      },
      read: (cpu, ctx) => this.value(a, cpu, ctx),
      native: (cpu) => this.nativeReadOf(a, cpu),
    };
  }

  /** What snapshot() + value() do for this attribute and cpu, for the batch's native loop. */
  private nativeReadOf(a: number, cpu: number): NativeRead | undefined {
    const p = this.policyIndex(cpu);
    if (p < 0) return undefined;
    const attr = this.attributes[a]!;
    if (attr.behavior === Behavior.Constant) {
      const constant = this.constants[a]![p];
      return constant === undefined || constant instanceof Error
        ? undefined
        : { kind: 'constant', value: constant * attr.scalar };
    }
    const slot = a * this.policies.length + p;
    return { kind: 'decimal-file', path: this.ctx.sysroot.path(this.slotPath(slot)), scale: attr.scalar };
  }

  private policyIndex(cpu: number): number {
    return this.policyOfCpu[cpu] ?? -1;
  }

  private readFile(path: string): number {
    return parseSysfsNumber(this.ctx.sysroot.readText(path), path);
  }

  private value(a: number, cpu: number, ctx: ReadContext<FreqSnapshot>): number {
    const p = this.policyIndex(cpu);
    if (p < 0) throw new InvalidArgumentError(`CPU ${cpu} belongs to no cpufreq policy`);
    const attr = this.attributes[a]!;
    if (attr.behavior === Behavior.Constant)
      return unwrap(this.constants[a]![p], attr.attribute) * attr.scalar;
    const slot = a * this.policies.length + p;
    const err = ctx.current.errors[slot];
    if (err) throw err;
    return ctx.current.values[slot]!;
  }

  private slotsFor(requests: readonly Request[]): number[] {
    const slots = new Set<number>();
    for (const r of requests) {
      const a = this.attrByName.get(r.def.name)!;
      if (this.attributes[a]!.behavior === Behavior.Constant) continue;
      const p = this.policyIndex(r.idx);
      if (p >= 0) slots.add(a * this.policies.length + p);
    }
    return [...slots].sort((x, y) => x - y);
  }

  private polled(slot: number): SysfsNumberFile {
    let f = this.files[slot];
    if (!f) {
      f = new SysfsNumberFile(this.ctx.sysroot, this.slotPath(slot));
      this.files[slot] = f;
    }
    return f;
  }

  private slotPath(slot: number): string {
    const n = this.policies.length;
    return `${this.policies[slot % n]!.dir}/${this.attributes[Math.floor(slot / n)]!.attribute}`;
  }

  /**
   * One snapshot, refilled by every read: no cpufreq signal is a rate, so a snapshot is never
   * looked at once the next is taken, and a batch at 1 kHz allocates nothing. Each read fills
   * every slot its requests use.
   */
  private reused?: FreqSnapshot;

  protected snapshot(requests: readonly Request[]): FreqSnapshot {
    const size = this.attributes.length * this.policies.length;
    this.reused ??= { values: new Float64Array(size).fill(Number.NaN), errors: [] };
    const snap = this.reused;
    for (const slot of this.slots.of(requests)) {
      const file = this.polled(slot);
      snap.errors[slot] = undefined;
      snap.values[slot] = Number.NaN;
      try {
        const attr = this.attributes[Math.floor(slot / this.policies.length)]!;
        // Sysfs frequencies are plain integers: parsed from the bytes; anything else as text.
        const decimal = file.readDecimal();
        const value = Number.isNaN(decimal) ? parseSysfsNumber(file.lastText(), file.path) : decimal;
        snap.values[slot] = value * attr.scalar;
      } catch (err) {
        snap.errors[slot] = err as Error;
      }
    }
    return snap;
  }

  /**
   * Validates a setting and queues it for its policy file. CPUs of one policy share the file: in
   * one batch they must be given the same setting, or one would be acknowledged and not applied.
   */
  private stage(a: number, cpu: number, value: number): void {
    const attr = this.attributes[a]!;
    const full = `${this.name}::${attr.name}`;
    const p = this.policyIndex(cpu);
    if (p < 0) throw new InvalidArgumentError(`${full}: CPU ${cpu} belongs to no cpufreq policy`);
    const { min, max } = this.hardwareRange(p);
    if (!(value >= min && value <= max)) {
      throw new InvalidArgumentError(
        `${full}: ${value} Hz is outside the ${min}..${max} Hz the hardware allows for CPU ${cpu} (policy${this.policies[p]!.id})`,
      );
    }
    const slot = a * this.policies.length + p;
    const label = this.slotPath(slot);
    const text = `${Math.round(value / attr.scalar)}\n`;
    const other = this.staged.get(slot);
    if (other && other.text !== text && other.cpu !== cpu) {
      throw new InvalidArgumentError(
        `${full}: CPUs ${other.cpu} and ${cpu} share ${label} and were set to ${other.text.trim()} and ${text.trim()} kHz in one batch; nothing written`,
      );
    }
    this.staged.set(slot, { path: this.ctx.sysroot.path(label), label, text, cpu });
  }

  /** cpuinfo_min_freq..cpuinfo_max_freq of a policy, in Hz; a control cannot be checked without them. */
  private hardwareRange(p: number): { min: number; max: number } {
    const get = (name: string): number => {
      const a = this.attributes.findIndex((x) => x.attribute === name);
      const dir = this.policies[p]!.dir;
      if (a < 0 || !this.present[a]![p]) {
        throw new JoulegateError(
          `${dir}/${name} is missing: cannot check the setting against the hardware range`,
        );
      }
      return unwrap(this.constants[a]![p], `${dir}/${name}`) * this.attributes[a]!.scalar;
    };
    return { min: get('cpuinfo_min_freq'), max: get('cpuinfo_max_freq') };
  }

  /** Writes the staged settings, each policy file once; reports every file that failed. */
  private flush(): void {
    const failures: string[] = [];
    for (const w of this.staged.values()) {
      try {
        writeFileSync(w.path, w.text);
      } catch (err) {
        failures.push(wrapIoError(err, w.label).message);
      }
    }
    this.staged.clear();
    if (failures.length > 0) throw new JoulegateError(`${this.name}: ${failures.join('; ')}`);
  }

  override async writeBatch(): Promise<void> {
    try {
      await super.writeBatch();
    } catch (err) {
      // One invalid setting: write none of the batch, so the policy files stay consistent.
      this.staged.clear();
      throw err;
    }
    this.flush();
  }

  override async writeControl(name: string, domain: DomainType, idx: number, value: number): Promise<void> {
    try {
      await super.writeControl(name, domain, idx, value);
    } catch (err) {
      this.staged.clear();
      throw err;
    }
    this.flush();
  }

  override metadata(): Record<string, unknown> {
    return { policies: this.policies.map((p) => ({ policy: p.id, cpus: p.cpus })) };
  }

  override async close(): Promise<void> {
    for (const f of this.files) f?.close();
    this.files = [];
  }
}

registerBackend({
  name: 'CPUFREQ',
  order: 30,
  description: 'CPU frequency limits and status from sysfs cpufreq policies',
  offers: {
    signals: CPUFREQ_ATTRIBUTES.flatMap((a) => (a.alias && !a.writeable ? [a.alias] : [])),
    controls: CPUFREQ_ATTRIBUTES.flatMap((a) => (a.alias && a.writeable ? [a.alias] : [])),
  },
  create: (ctx) => {
    const policies = discoverPolicies(ctx.sysroot);
    if (policies.length === 0) {
      throw new BackendUnavailableError(
        `no cpufreq policies under ${CPUFREQ_DIR} nor ${CPU_DIR}/cpu*/cpufreq (VM without a cpufreq driver?)`,
      );
    }
    return new CpufreqBackend(policies);
  },
});
