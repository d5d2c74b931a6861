import { parseAggregation } from '../../platform/aggregation.js';
import type { BackendContext, Diagnostic } from '../../platform/backend.js';
import { type DomainType, parseDomain } from '../../platform/domains.js';
import { WrappingCounter } from '../../platform/energy-counter.js';
import { bitsToDouble, FormatType } from '../../platform/format.js';
import { entryOfAlias } from '../../platform/signal-catalogue.js';
import { Behavior, parseBehavior, parseUnits, Units } from '../../platform/signal-info.js';
import { type ControlDef, type SignalDef, TableBackend } from '../../platform/table-backend.js';
import { parseCpuinfo } from '../cpuinfo/parse.js';
import { BackendUnavailableError, registerBackend } from '../registry.js';
import { FileMsrDevice, type MsrDevice, msrPath } from './device.js';
import { decodeField, encodeField, extractBits, type FieldCodec, fieldWidth, insertBits } from './field.js';
import { type MsrField, type MsrTable, parseMsrTable } from './schema.js';
import { builtinTableOffers, selectTable } from './tables.js';

interface Register {
  name: string;
  offset: number;
  domain: DomainType;
}

interface Field {
  name: string;
  register: Register;
  def: MsrField;
  unitsFrom?: Field;
}

/** Registers read once per batch, per CPU, and the wrap-corrected totals of counter fields. */
interface Snapshot {
  time: number;
  registers: Map<string, bigint | Error>;
  totals: Map<string, bigint | Error>;
}

export interface MsrOptions {
  /** The register device; tests pass one for registers closer than 8 bytes apart. */
  device?: MsrDevice;
  clock?: () => number;
}

const monotonicSeconds = () => performance.now() / 1000;
const regKey = (cpu: number, r: Register) => `${cpu}:${r.name}`;
const fieldKey = (cpu: number, f: Field) => `${cpu}:${f.register.name}:${f.name}`;

/** Model-specific registers from data tables (GEOPM's msr json format) through /dev/cpu/N/msr. */
export class MsrBackend extends TableBackend<Snapshot> {
  readonly id = 'msr';
  readonly name = 'MSR';
  readonly description = 'Model-specific registers (RAPL, frequency, cycle counters, temperature)';
  private device!: MsrDevice;
  private readonly clock: () => number;
  private readonly counters = new Map<string, WrappingCounter>();
  private readonly origins = new Map<string, bigint>();
  private readonly anomalies = new Map<string, string>();
  private readonly unitCache = new Map<string, number>();
  /** The fields (with their registers) each definition needs, read at the CPU of its index. */
  private readonly sourcesOf = new Map<SignalDef<Snapshot>, { registers: Register[]; counters: Field[] }>();
  private table: MsrTable | undefined;

  constructor(private readonly options: MsrOptions = {}) {
    super();
    this.clock = options.clock ?? monotonicSeconds;
  }

  override metadata(): Record<string, unknown> {
    return { vendor: this.table?.match.vendor, registers: Object.keys(this.table?.msrs ?? {}).length };
  }

  override diagnostics(): Diagnostic[] {
    return [
      ...super.diagnostics(),
      ...[...this.anomalies.values()].map((reason) => ({ backend: this.name, reason })),
    ];
  }

  override async close(): Promise<void> {
    this.device?.close();
  }

  /** The CPU whose device serves `domain` index `idx` (package registers: its first CPU). */
  private cpuOf(domain: DomainType, idx: number): number {
    const cpus = this.topology.cpusOf(domain, idx);
    if (cpus.length === 0) throw new Error(`no CPU in ${domain} ${idx}`);
    return cpus[0]!;
  }

  protected snapshot(requests: readonly { def: SignalDef<Snapshot>; idx: number }[]): Snapshot {
    const snap: Snapshot = { time: 0, registers: new Map(), totals: new Map() };
    for (const { def, idx } of requests) {
      const src = this.sourcesOf.get(def);
      if (!src) continue;
      const cpu = this.cpuOf(def.domain, idx);
      for (const r of src.registers) {
        const key = regKey(cpu, r);
        if (snap.registers.has(key)) continue;
        try {
          snap.registers.set(key, this.device.read(cpu, r.offset));
        } catch (err) {
          snap.registers.set(key, err as Error);
        }
      }
      for (const f of src.counters) this.feedCounter(snap, cpu, f);
    }
    snap.time = this.clock();
    return snap;
  }

  private feedCounter(snap: Snapshot, cpu: number, f: Field): void {
    const key = fieldKey(cpu, f);
    if (snap.totals.has(key)) return;
    const raw = snap.registers.get(regKey(cpu, f.register));
    if (raw === undefined || raw instanceof Error) {
      snap.totals.set(key, raw ?? new Error(`${key} not read`));
      return;
    }
    const width = fieldWidth(codecShape(f));
    let counter = this.counters.get(key);
    if (!counter) {
      counter = new WrappingCounter(1n << BigInt(width));
      this.counters.set(key, counter);
    }
    const bits = extractBits(raw, codecShape(f));
    const update = counter.feed(bits);
    if (update.anomaly)
      this.anomalies.set(key, `MSR::${f.register.name}:${f.name} on CPU ${cpu}: ${update.anomaly.message}`);
    // A double holds 53 bits exactly: wider counters (APERF, TSC) count from their first reading
    // so that differences stay exact; 32-bit energy counters keep the hardware's origin.
    if (width > 53 && !this.origins.has(key) && counter.total !== undefined)
      this.origins.set(key, counter.total);
    const total = counter.total === undefined ? undefined : counter.total - (this.origins.get(key) ?? 0n);
    snap.totals.set(key, total ?? new Error(`MSR::${f.register.name}:${f.name}: ${update.anomaly?.message}`));
  }

  /** scalar × the unit field's value (units are constant, so each CPU's is read once). */
  private scaleOf(f: Field, cpu: number, readRegister: (r: Register) => bigint): number {
    if (!f.unitsFrom) return f.def.scalar;
    const key = fieldKey(cpu, f.unitsFrom);
    let unit = this.unitCache.get(key);
    if (unit === undefined) {
      const u = f.unitsFrom;
      unit = decodeField(extractBits(readRegister(u.register), codecShape(u)), {
        ...codecShape(u),
        scale: this.scaleOf(u, cpu, readRegister),
      });
      this.unitCache.set(key, unit);
    }
    return f.def.scalar * unit;
  }

  private fromSnapshot(snap: Snapshot, cpu: number): (r: Register) => bigint {
    return (r) => {
      const v = snap.registers.get(regKey(cpu, r));
      if (v === undefined) throw new Error(`MSR::${r.name} was not read in this batch`);
      if (v instanceof Error) throw v;
      return v;
    };
  }

  private fieldValue(snap: Snapshot, cpu: number, f: Field): number {
    const readRegister = this.fromSnapshot(snap, cpu);
    const codec: FieldCodec = { ...codecShape(f), scale: this.scaleOf(f, cpu, readRegister) };
    if (f.def.function === 'overflow') {
      const total = snap.totals.get(fieldKey(cpu, f));
      if (total === undefined)
        throw new Error(`MSR::${f.register.name}:${f.name} was not read in this batch`);
      if (total instanceof Error) throw total;
      return decodeField(total, codec);
    }
    return decodeField(extractBits(readRegister(f.register), codec), codec);
  }

  /** Read-modify-write of the field's bits only; a value the field cannot hold writes nothing. */
  private writeField(f: Field, idx: number, value: number): void {
    const cpu = this.cpuOf(f.register.domain, idx);
    const readRegister = (r: Register) => this.device.read(cpu, r.offset);
    const codec: FieldCodec = { ...codecShape(f), scale: this.scaleOf(f, cpu, readRegister) };
    const bits = encodeField(value, codec, `MSR::${f.register.name}:${f.name}`);
    const before = this.device.read(cpu, f.register.offset);
    this.device.write(cpu, f.register.offset, insertBits(before, codec, bits));
  }

  protected define(ctx: BackendContext): {
    signals: SignalDef<Snapshot>[];
    controls: ControlDef<Snapshot>[];
  } {
    this.device = this.options.device ?? new FileMsrDevice(ctx.sysroot);
    const problems: string[] = [];
    const cpu = parseCpuinfo(ctx.sysroot.readText('/proc/cpuinfo'));
    const merged = selectTable(cpu, ctx.configDir, problems);
    for (const reason of problems) this.problems.push({ backend: this.name, reason });
    if (!merged) {
      throw new BackendUnavailableError(
        `no MSR table for ${cpu.vendor ?? 'unknown vendor'} family ${cpu.family ?? '?'}`,
      );
    }
    const table = parseMsrTable(merged, 'merged MSR tables');
    this.table = table;
    const fields = new Map<string, Field>();
    const registers: Register[] = [];
    for (const [name, r] of Object.entries(table.msrs)) {
      const reg: Register = { name, offset: Number.parseInt(r.offset, 16), domain: parseDomain(r.domain) };
      registers.push(reg);
      for (const [fname, def] of Object.entries(r.fields))
        fields.set(`${name}:${fname}`, { name: fname, register: reg, def });
    }
    for (const f of fields.values()) if (f.def.units_from) f.unitsFrom = fields.get(f.def.units_from)!;

    const aliasesOf = new Map<string, string[]>();
    for (const [alias, target] of Object.entries(table.aliases ?? {}))
      aliasesOf.set(target, [...(aliasesOf.get(target) ?? []), alias]);
    const withAliases = (name: string) => {
      const a = aliasesOf.get(name);
      return a ? { aliases: a } : {};
    };

    // A raw register carries the meaning of the fields it holds (DRAM_ENERGY_STATUS#: DRAM energy).
    const feedsOf = (reg: Register) =>
      [...fields]
        .filter(([, f]) => f.register === reg)
        .flatMap(([ref]) => aliasesOf.get(ref) ?? [])
        .find((alias) => entryOfAlias(alias) !== undefined);

    const signals: SignalDef<Snapshot>[] = [];
    const controls: ControlDef<Snapshot>[] = [];
    for (const reg of registers) {
      const feeds = feedsOf(reg);
      const raw: SignalDef<Snapshot> = {
        name: `${reg.name}#`,
        ...(feeds ? { feeds } : {}),
        description: `Raw 64-bit value of MSR ${reg.name} (0x${reg.offset.toString(16)})`,
        domain: reg.domain,
        aggregation: parseAggregation('select_first'),
        format: FormatType.Raw64,
        behavior: Behavior.Variable,
        units: Units.None,
        read: (idx, c) => bitsToDouble(this.fromSnapshot(c.current, this.cpuOf(reg.domain, idx))(reg)),
      };
      this.sourcesOf.set(raw, { registers: [reg], counters: [] });
      signals.push(raw);
    }
    for (const [ref, f] of fields) {
      const base = {
        name: ref,
        ...withAliases(ref),
        description: f.def.description,
        domain: f.register.domain,
        aggregation: parseAggregation(f.def.aggregation),
        format: f.def.function === 'logic' ? FormatType.Integer : FormatType.Double,
        behavior: parseBehavior(f.def.behavior),
        units: parseUnits(f.def.units),
        read: (idx: number, c: { current: Snapshot }) =>
          this.fieldValue(c.current, this.cpuOf(f.register.domain, idx), f),
      };
      const def: SignalDef<Snapshot> = f.def.writeable
        ? ({ ...base, write: (idx: number, v: number) => this.writeField(f, idx, v) } as ControlDef<Snapshot>)
        : base;
      this.sourcesOf.set(def, sourcesFor([f]));
      if (f.def.writeable) controls.push(def as ControlDef<Snapshot>);
      else signals.push(def);
    }
    for (const [name, d] of Object.entries(table.derived ?? {})) {
      const def = this.derivedDef(name, d, fields, withAliases(name));
      signals.push(def);
    }
    return { signals, controls };
  }

  private derivedDef(
    name: string,
    d: NonNullable<MsrTable['derived']>[string],
    fields: Map<string, Field>,
    aliases: { aliases?: string[] },
  ): SignalDef<Snapshot> {
    if ('derivative' in d) {
      const f = fields.get(d.derivative)!;
      const def: SignalDef<Snapshot> = {
        name,
        ...aliases,
        description: `${d.description} (change of ${d.derivative} over time between reads)`,
        domain: f.register.domain,
        aggregation: parseAggregation('sum'),
        format: FormatType.Double,
        behavior: Behavior.Variable,
        units: Units.Watts,
        rate: true,
        read: (idx, c) => {
          if (!c.previous) return Number.NaN;
          const cpu = this.cpuOf(f.register.domain, idx);
          const dt = c.current.time - c.previous.time;
          if (!(dt > 0)) return Number.NaN;
          return (this.fieldValue(c.current, cpu, f) - this.fieldValue(c.previous, cpu, f)) / dt;
        },
      };
      this.sourcesOf.set(def, sourcesFor([f]));
      return def;
    }
    const [minuend, subtrahend] = d.difference.map((ref) => fields.get(ref)!) as [Field, Field];
    const def: SignalDef<Snapshot> = {
      name,
      ...aliases,
      description: `${d.description} (${d.difference[0]} − ${d.difference[1]})`,
      domain: subtrahend.register.domain,
      aggregation: parseAggregation('average'),
      format: FormatType.Double,
      behavior: Behavior.Variable,
      units: parseUnits(subtrahend.def.units),
      read: (idx, c) => {
        const cpu = this.cpuOf(subtrahend.register.domain, idx);
        return this.fieldValue(c.current, cpu, minuend) - this.fieldValue(c.current, cpu, subtrahend);
      },
    };
    this.sourcesOf.set(def, sourcesFor([minuend, subtrahend]));
    return def;
  }
}

function codecShape(f: Field): { beginBit: number; endBit: number; fn: MsrField['function'] } {
  return { beginBit: f.def.begin_bit, endBit: f.def.end_bit, fn: f.def.function };
}

/** Registers to read (the fields' own and their unit registers) and counters to feed. */
function sourcesFor(fields: Field[]): { registers: Register[]; counters: Field[] } {
  const registers = new Set<Register>();
  for (const f of fields) {
    registers.add(f.register);
    for (let u = f.unitsFrom; u; u = u.unitsFrom) registers.add(u.register);
  }
  return { registers: [...registers], counters: fields.filter((f) => f.def.function === 'overflow') };
}

/** Whether this process can use the MSR device of the first CPU; the reason when not. */
export function msrAccess(ctx: BackendContext): string | undefined {
  const cpu = ctx.topology.placements[0]?.cpu ?? 0;
  const path = msrPath(ctx.sysroot, cpu);
  if (!ctx.sysroot.exists(path)) return `no ${path} (load the msr or msr-safe kernel module)`;
  if (!ctx.sysroot.readable(path)) {
    return `${path}: permission denied (raw MSRs need root with CAP_SYS_RAWIO; use msr-safe with an allow-list, or read through joulegated)`;
  }
  return undefined;
}

registerBackend({
  name: 'MSR',
  order: 45,
  description: 'model-specific registers via /dev/cpu/N/msr_safe or /dev/cpu/N/msr',
  offers: builtinTableOffers,
  create: (ctx) => {
    const denied = msrAccess(ctx);
    if (denied) throw new BackendUnavailableError(denied);
    return new MsrBackend();
  },
});
