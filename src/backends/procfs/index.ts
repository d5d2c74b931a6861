import { Aggregation } from '../../platform/aggregation.js';
import type { BackendContext } from '../../platform/backend.js';
import { DomainType } from '../../platform/domains.js';
import { FormatType } from '../../platform/format.js';
import { Behavior, Units } from '../../platform/signal-info.js';
import type { Sysroot } from '../../platform/sysroot.js';
import { type ReadContext, type SignalDef, TableBackend } from '../../platform/table-backend.js';
import { attempt, type Outcome, PolledFile, unwrap } from '../polled-file.js';
import { BackendUnavailableError, registerBackend } from '../registry.js';
import { RequestPlan } from '../request-plan.js';
import {
  busyFraction,
  type CpuTimes,
  parseDiskstats,
  parseMeminfo,
  parseNetDev,
  parseProcStat,
  sumOver,
} from './parse.js';

/** The /proc files PROCFS reads; each is read at most once per batch, only if a pushed signal needs it. */
const SOURCES = {
  stat: '/proc/stat',
  meminfo: '/proc/meminfo',
  diskstats: '/proc/diskstats',
  netdev: '/proc/net/dev',
} as const;
type Source = keyof typeof SOURCES;

/** Byte counts of one board-level file, by signal name (MEMORY_USED, DISK_READ_BYTES, …). */
type ByteCounts = Record<string, number>;

interface ProcSnapshot {
  stat?: Outcome<CpuTimes>;
  bytes: Partial<Record<Exclude<Source, 'stat'>, Outcome<ByteCounts>>>;
}

interface ProcSignalDef extends SignalDef<ProcSnapshot> {
  source: Source;
}

type Ctx = ReadContext<ProcSnapshot>;

function stat(snap: ProcSnapshot | undefined): CpuTimes {
  return unwrap(snap?.stat, SOURCES.stat);
}

/**
 * Whole disks are the entries of /sys/block that have a `device` link: the kernel lists only
 * whole disks (never partitions) in /sys/block, and loop, ram, zram, device-mapper and md
 * devices there have no backing device. Counting only these avoids counting the same bytes
 * twice (partition + disk, or LVM volume + disk). diskstats writes '/' where sysfs writes '!'.
 */
export function wholeDisks(root: Sysroot): Set<string> {
  const out = new Set<string>();
  for (const entry of root.list('/sys/block')) {
    if (root.exists(`/sys/block/${entry}/device`)) out.add(entry.replace(/!/g, '/'));
  }
  return out;
}

/** Network interfaces counted: all but loopback, whose traffic never leaves the node. */
export function countedInterface(name: string): boolean {
  return name !== 'lo';
}

const WHOLE_DISKS = 'whole disks (partitions and loop/ram/dm/md devices not counted)';

/** Board-level byte counts: one row per signal, all served by one generic reader. */
const BYTE_SIGNALS: readonly {
  name: string;
  source: Exclude<Source, 'stat'>;
  behavior: Behavior;
  description: string;
}[] = [
  {
    name: 'MEMORY_TOTAL',
    source: 'meminfo',
    behavior: Behavior.Constant,
    description: 'Usable physical memory in bytes (MemTotal)',
  },
  {
    name: 'MEMORY_AVAILABLE',
    source: 'meminfo',
    behavior: Behavior.Variable,
    description: 'Memory in bytes available to start new programs without swapping (MemAvailable)',
  },
  {
    name: 'MEMORY_USED',
    source: 'meminfo',
    behavior: Behavior.Variable,
    description: 'Memory in use in bytes: MemTotal - MemAvailable',
  },
  {
    name: 'DISK_READ_BYTES',
    source: 'diskstats',
    behavior: Behavior.Monotone,
    description: `Bytes read from ${WHOLE_DISKS} since boot`,
  },
  {
    name: 'DISK_WRITE_BYTES',
    source: 'diskstats',
    behavior: Behavior.Monotone,
    description: `Bytes written to ${WHOLE_DISKS} since boot`,
  },
  {
    name: 'NET_RX_BYTES',
    source: 'netdev',
    behavior: Behavior.Monotone,
    description: 'Bytes received on all network interfaces but lo since boot',
  },
  {
    name: 'NET_TX_BYTES',
    source: 'netdev',
    behavior: Behavior.Monotone,
    description: 'Bytes sent on all network interfaces but lo since boot',
  },
];

/** CPU utilisation, memory, disk and network traffic from /proc (perun's psutil sensors). */
export class ProcfsBackend extends TableBackend<ProcSnapshot> {
  readonly id = 'procfs';
  readonly name = 'PROCFS';
  readonly description = 'CPU utilisation, memory, disk and network counters from /proc';
  private files = new Map<Source, PolledFile>();
  private disks = new Set<string>();
  /** Last utilisation per signal and CPU, standing while no clock tick elapses (see utilisation()). */
  private readonly lastUtilisation = new Map<string, number>();
  /** The files the pushed signals need: each is read once per batch. */
  private readonly sources = new RequestPlan<{ def: SignalDef<ProcSnapshot> }, Source[]>((requests) => [
    ...new Set(requests.map((r) => (r.def as ProcSignalDef).source)),
  ]);

  protected define(ctx: BackendContext): { signals: ProcSignalDef[] } {
    const root = ctx.sysroot;
    for (const [source, path] of Object.entries(SOURCES) as [Source, string][]) {
      if (root.exists(path)) this.files.set(source, new PolledFile(root.path(path), path));
    }
    if (!this.files.has('stat')) throw new BackendUnavailableError(`${SOURCES.stat} not found`);
    const usable = new Set<Source>(this.files.keys());
    for (const source of ['meminfo', 'diskstats', 'netdev'] as const) {
      if (!usable.has(source)) this.missingSource(source, `${SOURCES[source]} not found`);
    }
    if (usable.has('diskstats') && !root.exists('/sys/block')) {
      usable.delete('diskstats');
      this.missingSource('diskstats', 'no /sys/block to tell whole disks from partitions');
    }
    if (usable.has('diskstats')) {
      const why = this.countDisks(root);
      if (why !== undefined) {
        usable.delete('diskstats');
        this.missingSource('diskstats', why);
      }
    }
    const signals: ProcSignalDef[] = [...this.cpuSignals(), ...this.byteSignals(usable)];
    return { signals };
  }

  /**
   * Keeps the whole disks /proc/diskstats counts; the reason when there is none, since a sum over
   * no disk would read as 0 bytes moved rather than as unknown. A diskstats that does not parse
   * now is left to fail at read time with its own error.
   */
  private countDisks(root: Sysroot): string | undefined {
    this.disks = wholeDisks(root);
    if (this.disks.size === 0) {
      return 'no entry of /sys/block has a device link (only virtual devices such as dm, md, loop, whose bytes are not counted)';
    }
    const file = this.files.get('diskstats')!;
    let listed: Set<string>;
    try {
      listed = new Set(parseDiskstats(file.read(), file.label).map((d) => d.name));
    } catch {
      return undefined;
    }
    this.disks = new Set([...this.disks].filter((d) => listed.has(d)));
    if (this.disks.size > 0) return undefined;
    return `none of the whole disks of /sys/block (entries with a device link) is in ${SOURCES.diskstats}; entries without a device link are taken as virtual and not counted`;
  }

  private missingSource(source: Source, reason: string): void {
    for (const row of BYTE_SIGNALS.filter((r) => r.source === source)) {
      this.problems.push({ backend: this.name, signal: `${this.name}::${row.name}`, reason });
    }
  }

  private cpuSignals(): ProcSignalDef[] {
    const common = {
      source: 'stat' as const,
      aggregation: Aggregation.Average,
      format: FormatType.Double,
      behavior: Behavior.Variable,
      units: Units.None,
      rate: true,
    };
    return [
      {
        ...common,
        name: 'CPU_UTILIZATION',
        aliases: ['CPU_UTILIZATION'],
        description:
          'Fraction of time the CPU was busy (not idle or waiting for I/O) since the last read, 0..1',
        domain: DomainType.Cpu,
        read: (cpu, ctx: Ctx) =>
          this.utilisation(
            `cpu${cpu}`,
            ctx,
            (t) => t.busy[cpu]!,
            (t) => t.total[cpu]!,
          ),
      },
      {
        ...common,
        name: 'CPU_UTILIZATION_TOTAL',
        feeds: 'CPU_UTILIZATION',
        description:
          'Fraction of time all CPUs together were busy since the last read, 0..1 (the "cpu" line)',
        domain: DomainType.Board,
        read: (_idx, ctx: Ctx) =>
          this.utilisation(
            'cpu',
            ctx,
            (t) => t.allBusy,
            (t) => t.allTotal,
          ),
      },
    ];
  }

  /**
   * Busy fraction between the previous and the current /proc/stat, of the ticks `busy`/`total`
   * pick (one CPU's line or the "cpu" line, named by `line`). /proc/stat counts in clock ticks:
   * two reads within one tick see the same counters, and that interval has no new value yet,
   * which is no failure. The previous value stands (NaN before there is one).
   */
  private utilisation(
    line: string,
    ctx: Ctx,
    busy: (t: CpuTimes) => number,
    total: (t: CpuTimes) => number,
  ): number {
    const now = stat(ctx.current);
    const before = stat(ctx.previous);
    if (total(now) === total(before)) return this.lastUtilisation.get(line) ?? Number.NaN;
    const value = busyFraction(busy(before), total(before), busy(now), total(now));
    this.lastUtilisation.set(line, value);
    return value;
  }

  /** The rows of BYTE_SIGNALS whose file exists here. */
  private byteSignals(sources: ReadonlySet<Source>): ProcSignalDef[] {
    return BYTE_SIGNALS.filter((row) => sources.has(row.source)).map((row) => ({
      ...row,
      domain: DomainType.Board,
      aggregation: Aggregation.Sum,
      format: FormatType.Integer,
      units: Units.None,
      read: (_idx, ctx) => unwrap(ctx.current.bytes[row.source], SOURCES[row.source])[row.name]!,
    }));
  }

  protected snapshot(requests: readonly { def: SignalDef<ProcSnapshot> }[]): ProcSnapshot {
    const snap: ProcSnapshot = { bytes: {} };
    for (const source of this.sources.of(requests)) {
      const file = this.files.get(source)!;
      if (source === 'stat') {
        const numCpu = this.topology.numDomain(DomainType.Cpu);
        snap.stat = attempt(() => parseProcStat(file.read(), numCpu, file.label));
      } else {
        snap.bytes[source] = attempt(() => this.byteCounts(source, file.read(), file.label));
      }
    }
    return snap;
  }

  private byteCounts(source: Exclude<Source, 'stat'>, text: string, file: string): ByteCounts {
    switch (source) {
      case 'meminfo': {
        const m = parseMeminfo(text, file);
        return { MEMORY_TOTAL: m.totalBytes, MEMORY_AVAILABLE: m.availableBytes, MEMORY_USED: m.usedBytes };
      }
      case 'diskstats': {
        const disks = parseDiskstats(text, file);
        const whole = (name: string) => this.disks.has(name);
        return {
          DISK_READ_BYTES: sumOver(disks, whole, (d) => d.readBytes),
          DISK_WRITE_BYTES: sumOver(disks, whole, (d) => d.writeBytes),
        };
      }
      case 'netdev': {
        const ifaces = parseNetDev(text, file);
        return {
          NET_RX_BYTES: sumOver(ifaces, countedInterface, (n) => n.rxBytes),
          NET_TX_BYTES: sumOver(ifaces, countedInterface, (n) => n.txBytes),
        };
      }
    }
  }

  override metadata(): Record<string, unknown> {
    return { whole_disks: [...this.disks].sort(), rate_window_s: this.rateWindow };
  }

  override async close(): Promise<void> {
    for (const f of this.files.values()) f.close();
  }
}

registerBackend({
  name: 'PROCFS',
  order: 20,
  description: 'CPU utilisation, memory, disk and network counters from /proc',
  offers: { signals: ['CPU_UTILIZATION'] },
  create: (ctx) => {
    if (!ctx.sysroot.exists(SOURCES.stat)) {
      throw new BackendUnavailableError(`${ctx.sysroot.path(SOURCES.stat)} not found (no procfs mounted?)`);
    }
    return new ProcfsBackend();
  },
});
