import { writeFileSync } from 'node:fs';
import { Aggregation } from '../../platform/aggregation.js';
import type { BackendContext, Diagnostic } from '../../platform/backend.js';
import { DomainType } from '../../platform/domains.js';
import { WrappingCounter } from '../../platform/energy-counter.js';
import { InvalidArgumentError, ParseError, PermissionError } from '../../platform/errors.js';
import { FormatType } from '../../platform/format.js';
import { Behavior, Units } from '../../platform/signal-info.js';
import { wrapIoError } from '../../platform/sysroot.js';
import { type ControlDef, type SignalDef, TableBackend } from '../../platform/table-backend.js';
import type { PolledFile } from '../polled-file.js';
import { BackendUnavailableError, registerBackend } from '../registry.js';
import { parseUnsigned, polledSysfs, readUnsigned } from '../sysfs-reader.js';
import { type Constraint, discoverZones, type Zone, type ZoneKind } from './zones.js';

/** Energy of the zones one request needs, in joules, or the error that stopped the read. */
interface Snapshot {
  time: number;
  energy: Map<Zone, number | Error>;
}

/** Signal names per zone kind; `alias` marks the kinds whose names are the generic ones. */
const KIND_SIGNALS: Record<ZoneKind, { base: string; alias: boolean; what: string }> = {
  package: { base: 'CPU', alias: true, what: 'CPU package (RAPL package domain)' },
  core: { base: 'CPU_CORE', alias: false, what: 'CPU cores of a package (RAPL PP0)' },
  uncore: { base: 'CPU_UNCORE', alias: false, what: 'integrated graphics/uncore of a package (RAPL PP1)' },
  dram: { base: 'DRAM', alias: true, what: 'DRAM attached to a package (RAPL DRAM domain)' },
  psys: { base: 'BOARD', alias: true, what: 'whole platform (RAPL psys domain)' },
};

export interface PowercapOptions {
  /** Seconds on a monotonic clock; tests script it to check derived power exactly. */
  clock?: () => number;
}

const monotonicSeconds = () => performance.now() / 1000;

/** RAPL energy counters and power limits through the Linux powercap framework. */
export class PowercapBackend extends TableBackend<Snapshot> {
  readonly id = 'powercap';
  readonly name = 'POWERCAP';
  readonly description = 'RAPL energy counters and power limits from /sys/class/powercap';
  private readonly clock: () => number;
  private zones: Zone[] = [];
  private readonly energyFiles = new Map<Zone, PolledFile>();
  private readonly counters = new Map<Zone, WrappingCounter>();
  private readonly anomalies = new Map<Zone, string>();
  /** Zones each energy/power definition sums at each native index. */
  private readonly zonesOf = new Map<SignalDef<Snapshot>, Map<number, Zone[]>>();

  constructor(options: PowercapOptions = {}) {
    super();
    this.clock = options.clock ?? monotonicSeconds;
  }

  override metadata(): Record<string, unknown> {
    return { zones: this.zones.map((z) => ({ dir: z.dir, kind: z.kind, package: z.packageId ?? null })) };
  }

  override diagnostics(): Diagnostic[] {
    const anomalies = [...this.anomalies].map(([z, reason]) => ({
      backend: this.name,
      reason: `${z.dir}: ${reason}`,
    }));
    return [...super.diagnostics(), ...anomalies];
  }

  override async close(): Promise<void> {
    for (const f of this.energyFiles.values()) f.close();
  }

  protected snapshot(requests: readonly { def: SignalDef<Snapshot>; idx: number }[]): Snapshot {
    const energy = new Map<Zone, number | Error>();
    for (const { def, idx } of requests) {
      for (const zone of this.zonesOf.get(def)?.get(idx) ?? []) {
        if (!energy.has(zone)) energy.set(zone, this.readEnergy(zone));
      }
    }
    return { time: this.clock(), energy };
  }

  /** One wrap-corrected energy reading in joules (the error, if the read failed). */
  private readEnergy(zone: Zone): number | Error {
    if (zone.energyDenied) return new PermissionError(`${zone.dir}/energy_uj: ${zone.energyDenied}`);
    let file = this.energyFiles.get(zone);
    if (!file) {
      file = polledSysfs(this.ctx.sysroot, `${zone.dir}/energy_uj`);
      this.energyFiles.set(zone, file);
    }
    let counter = this.counters.get(zone);
    if (!counter) {
      counter = new WrappingCounter(zone.modulusUj);
      this.counters.set(zone, counter);
    }
    try {
      const update = counter.feed(parseUnsigned(file.read(), file.label));
      if (update.anomaly) this.anomalies.set(zone, update.anomaly.message);
      // Nothing accepted yet (first reading out of range): there is no energy to report.
      if (counter.total === undefined)
        return new ParseError(`${zone.dir}/energy_uj: ${update.anomaly?.message}`);
      return Number(update.total) / 1e6;
    } catch (err) {
      return err as Error;
    }
  }

  protected define(ctx: BackendContext): {
    signals: SignalDef<Snapshot>[];
    controls: ControlDef<Snapshot>[];
  } {
    const found: string[] = [];
    this.zones = discoverZones(ctx.sysroot, found);
    for (const reason of found) this.problems.push({ backend: this.name, reason });
    if (this.zones.length === 0) {
      throw new BackendUnavailableError(
        `no RAPL zones under ${ctx.sysroot.path('/sys/class/powercap')}${found.length ? `: ${found.join('; ')}` : ''}`,
      );
    }
    const packageIndex = densePackageIndex(ctx);
    const placed = new Map<string, Map<number, Zone[]>>();
    for (const zone of this.zones) {
      const idx = zone.kind === 'psys' ? 0 : packageIndex.get(zone.packageId!);
      if (idx === undefined) {
        this.problems.push({
          backend: this.name,
          reason: `${zone.dir}: package ${zone.packageId} is not online`,
        });
        continue;
      }
      const key = `${zone.id.mmio ? 'MMIO_' : ''}${KIND_SIGNALS[zone.kind].base}|${zone.kind}|${zone.id.mmio}`;
      const byIdx = placed.get(key) ?? new Map<number, Zone[]>();
      byIdx.set(idx, [...(byIdx.get(idx) ?? []), zone]);
      placed.set(key, byIdx);
    }
    const signals: SignalDef<Snapshot>[] = [];
    const controls: ControlDef<Snapshot>[] = [];
    for (const [key, byIdx] of placed) {
      const [base, kind, mmio] = key.split('|') as [string, ZoneKind, string];
      const aliased = KIND_SIGNALS[kind].alias && mmio === 'false';
      const domain = kind === 'psys' ? DomainType.Board : DomainType.Package;
      const withEnergy = new Map([...byIdx].map(([i, zs]) => [i, zs.filter((z) => z.hasEnergy)] as const));
      if ([...withEnergy.values()].some((zs) => zs.length > 0)) {
        for (const def of this.energyDefs(base, kind, domain, aliased, withEnergy)) {
          this.zonesOf.set(def, withEnergy);
          signals.push(def);
        }
      }
      if (kind === 'package') controls.push(...this.limitDefs(base, aliased, byIdx));
      if (kind === 'package') signals.push(...this.limitRangeDefs(base, aliased, byIdx));
    }
    return { signals, controls };
  }

  private energyDefs(
    base: string,
    kind: ZoneKind,
    domain: DomainType,
    aliased: boolean,
    byIdx: Map<number, Zone[]>,
  ): SignalDef<Snapshot>[] {
    const denied = [...byIdx.values()].flat().find((z) => z.energyDenied);
    const note = denied ? ` — energy_uj is not readable by this process: ${denied.energyDenied}` : '';
    for (const z of [...byIdx.values()].flat().filter((x) => x.energyDenied)) {
      for (const suffix of ['ENERGY', 'POWER']) {
        this.problems.push({
          backend: this.name,
          signal: this.fullName(`${base}_${suffix}`),
          reason: `${z.dir}/energy_uj: ${z.energyDenied}`,
        });
      }
    }
    const what = KIND_SIGNALS[kind].what;
    const common = { domain, aggregation: Aggregation.Sum, format: FormatType.Double };
    const available = (idx: number) => (byIdx.get(idx)?.length ?? 0) > 0;
    const whyUnavailable = (idx: number) => `no ${kind} RAPL zone with an energy counter for package ${idx}`;
    const energyAt = (idx: number, snap: Snapshot): number => {
      let sum = 0;
      for (const z of byIdx.get(idx) ?? []) {
        const v = snap.energy.get(z);
        if (v instanceof Error) throw v;
        if (v === undefined) return Number.NaN;
        sum += v;
      }
      return sum;
    };
    // One zone per package, all of one range: the package's energy wraps where its zone does.
    const zones = [...byIdx.values()];
    const ranges = new Set(zones.flat().map((z) => z.modulusUj));
    const counterRange =
      zones.every((z) => z.length === 1) && ranges.size === 1 ? Number([...ranges][0]!) / 1e6 : undefined;
    return [
      {
        ...common,
        ...(counterRange !== undefined ? { counterRange } : {}),
        name: `${base}_ENERGY`,
        ...(aliased ? { aliases: [`${base}_ENERGY`] } : {}),
        description: `Energy used by the ${what} since an arbitrary origin, wrap-corrected (never goes backwards)${note}`,
        behavior: Behavior.Monotone,
        units: Units.Joules,
        available,
        whyUnavailable,
        read: (idx, ctx) => energyAt(idx, ctx.current),
      },
      {
        ...common,
        name: `${base}_POWER`,
        ...(aliased ? { aliases: [`${base}_POWER`] } : {}),
        description: `Average power of the ${what} between two reads (energy delta / time delta)${note}`,
        behavior: Behavior.Variable,
        units: Units.Watts,
        rate: true,
        available,
        whyUnavailable,
        read: (idx, ctx) => {
          if (!ctx.previous) return Number.NaN;
          const dt = ctx.current.time - ctx.previous.time;
          if (!(dt > 0)) return Number.NaN;
          return (energyAt(idx, ctx.current) - energyAt(idx, ctx.previous)) / dt;
        },
      },
    ];
  }

  /** Constraint files of the package zone at `idx` (the first zone; die zones share a limit). */
  private constraintPath(byIdx: Map<number, Zone[]>, idx: number): { zone: Zone; prefix: string } {
    const zone = byIdx.get(idx)?.find((z) => z.longTerm);
    if (!zone) throw new InvalidArgumentError(`no power limit constraint for package ${idx}`);
    return { zone, prefix: `${zone.dir}/constraint_${zone.longTerm!.index}` };
  }

  private limitDefs(base: string, aliased: boolean, byIdx: Map<number, Zone[]>): ControlDef<Snapshot>[] {
    // Multi-die packages have one limit per die; a package-level control would set only one of
    // them, so it is offered only where one zone holds the package's limit.
    const available = (idx: number) => byIdx.get(idx)?.filter((z) => z.longTerm).length === 1;
    for (const [idx, zones] of byIdx) {
      const limited = zones.filter((z) => z.longTerm);
      if (limited.length > 1) {
        this.problems.push({
          backend: this.name,
          signal: this.fullName(`${base}_POWER_LIMIT`),
          reason: `package ${idx} has ${limited.length} die zones with separate power limits (${limited.map((z) => z.dir).join(', ')}); per-die limit controls are not supported yet`,
        });
      }
    }
    if (![...byIdx.keys()].some(available)) return [];
    const root = this.ctx.sysroot;
    const readScaled = (path: string, scale: number) => Number(readUnsigned(root, path)) / scale;
    const whyUnavailable = (idx: number) => {
      const limited = byIdx.get(idx)?.filter((z) => z.longTerm).length ?? 0;
      return limited === 0
        ? `no package RAPL zone with a long-term power limit for package ${idx}`
        : `package ${idx} has ${limited} die zones with separate power limits`;
    };
    const common = {
      domain: DomainType.Package,
      format: FormatType.Double,
      behavior: Behavior.Variable,
      available,
      whyUnavailable,
    };
    const alias = (name: string) => (aliased ? { aliases: [name] } : {});
    /** A constraint file in micro-units: read as SI, written after the range check. */
    const constraintFile = (
      file: string,
      control: string,
      unit: string,
      bounds: (c: Constraint) => [number, number | undefined],
    ) => ({
      read: (idx: number) => readScaled(`${this.constraintPath(byIdx, idx).prefix}_${file}`, 1e6),
      write: (idx: number, value: number) => {
        const { zone, prefix } = this.constraintPath(byIdx, idx);
        const [min, max] = bounds(zone.longTerm!);
        checkRange(control, idx, value, min, max, 1e6, unit);
        writeSysfs(root.path(`${prefix}_${file}`), `${prefix}_${file}`, Math.round(value * 1e6));
      },
    });
    return [
      {
        ...common,
        name: `${base}_POWER_LIMIT`,
        ...alias(`${base}_POWER_LIMIT_CONTROL`),
        description: 'Long-term (PL1) package power limit, averaged over the time window',
        aggregation: Aggregation.Sum,
        units: Units.Watts,
        ...constraintFile('power_limit_uw', `${base}_POWER_LIMIT_CONTROL`, 'W', (c) => [
          c.minPowerUw ?? 0,
          c.maxPowerUw,
        ]),
      },
      {
        ...common,
        name: `${base}_POWER_TIME_WINDOW`,
        ...alias(`${base}_POWER_TIME_WINDOW_CONTROL`),
        description: 'Time window the long-term package power limit is averaged over',
        aggregation: Aggregation.Average,
        units: Units.Seconds,
        ...constraintFile('time_window_us', `${base}_POWER_TIME_WINDOW_CONTROL`, 's', (c) => [
          c.minTimeWindowUs ?? 0,
          c.maxTimeWindowUs,
        ]),
      },
      {
        ...common,
        name: `${base}_POWER_LIMIT_ENABLE`,
        description: 'Whether the package zone enforces its power limits (1) or not (0)',
        aggregation: Aggregation.ExpectSame,
        units: Units.None,
        format: FormatType.Integer,
        read: (idx) => readScaled(`${this.constraintPath(byIdx, idx).zone.dir}/enabled`, 1),
        write: (idx, value) => {
          if (value !== 0 && value !== 1) {
            throw new InvalidArgumentError(
              `${base}_POWER_LIMIT_ENABLE: expected 0 or 1, got ${value}; nothing written`,
            );
          }
          const dir = this.constraintPath(byIdx, idx).zone.dir;
          writeSysfs(root.path(`${dir}/enabled`), `${dir}/enabled`, value);
        },
      },
    ];
  }

  /** Signals for the bounds the kernel states for the long-term constraint, where files give them. */
  private limitRangeDefs(base: string, aliased: boolean, byIdx: Map<number, Zone[]>): SignalDef<Snapshot>[] {
    const specs = [
      {
        suffix: 'POWER_LIMIT_MAX',
        alias: `${base}_POWER_LIMIT_DEFAULT`,
        key: 'maxPowerUw',
        file: 'max_power_uw',
        units: Units.Watts,
        text: 'Largest long-term power limit the kernel states for the package (constraint max_power_uw: the thermal design power)',
      },
      {
        suffix: 'POWER_LIMIT_MIN',
        alias: `${base}_POWER_MIN_AVAIL`,
        key: 'minPowerUw',
        file: 'min_power_uw',
        units: Units.Watts,
        text: 'Smallest long-term power limit the kernel states for the package (constraint min_power_uw)',
      },
      {
        suffix: 'POWER_TIME_WINDOW_MAX',
        key: 'maxTimeWindowUs',
        file: 'max_time_window_us',
        units: Units.Seconds,
        text: 'Longest time window for the long-term limit (constraint max_time_window_us)',
      },
      {
        suffix: 'POWER_TIME_WINDOW_MIN',
        key: 'minTimeWindowUs',
        file: 'min_time_window_us',
        units: Units.Seconds,
        text: 'Shortest time window for the long-term limit (constraint min_time_window_us)',
      },
    ] as const;
    const out: SignalDef<Snapshot>[] = [];
    for (const s of specs) {
      const valueAt = (idx: number) =>
        byIdx.get(idx)?.find((z) => z.longTerm?.[s.key] !== undefined)?.longTerm?.[s.key];
      if (![...byIdx.keys()].some((i) => valueAt(i) !== undefined)) continue;
      out.push({
        name: `${base}_${s.suffix}`,
        ...('alias' in s && aliased ? { aliases: [s.alias] } : {}),
        description: s.text,
        domain: DomainType.Package,
        aggregation: Aggregation.Sum,
        format: FormatType.Double,
        behavior: Behavior.Constant,
        units: s.units,
        available: (idx) => valueAt(idx) !== undefined,
        whyUnavailable: (idx) =>
          `no RAPL zone of package ${idx} has a readable long-term constraint_N_${s.file}`,
        read: (idx) => (valueAt(idx) ?? Number.NaN) / 1e6,
      });
    }
    return out;
  }
}

/** Dense package index (topology order) for each Linux physical package id. */
function densePackageIndex(ctx: BackendContext): Map<number, number> {
  const ids = [...new Set(ctx.topology.placements.map((p) => p.packageId))].sort((a, b) => a - b);
  return new Map(ids.map((id, i) => [id, i]));
}

/** Refuses a setting outside [min, max] (given in file units) before anything is written. */
function checkRange(
  control: string,
  idx: number,
  value: number,
  minFile: number,
  maxFile: number | undefined,
  scale: number,
  unit: string,
): void {
  const scaled = value * scale;
  if (scaled < minFile || (maxFile !== undefined && scaled > maxFile)) {
    const hi = maxFile === undefined ? 'unbounded' : `${maxFile / scale}`;
    throw new InvalidArgumentError(
      `${control}: ${value} ${unit} is outside package ${idx}'s range ${minFile / scale}..${hi} ${unit}; nothing written`,
    );
  }
}

function writeSysfs(path: string, what: string, value: number): void {
  try {
    writeFileSync(path, `${value}\n`);
  } catch (err) {
    throw wrapIoError(err, what);
  }
}

registerBackend({
  name: 'POWERCAP',
  order: 50,
  description: 'RAPL through /sys/class/powercap',
  offers: {
    signals: [
      'CPU_ENERGY',
      'CPU_POWER',
      'DRAM_ENERGY',
      'DRAM_POWER',
      'BOARD_ENERGY',
      'BOARD_POWER',
      'CPU_POWER_LIMIT_DEFAULT',
      'CPU_POWER_MIN_AVAIL',
    ],
    controls: ['CPU_POWER_LIMIT_CONTROL', 'CPU_POWER_TIME_WINDOW_CONTROL'],
  },
  create: () => new PowercapBackend(),
});
