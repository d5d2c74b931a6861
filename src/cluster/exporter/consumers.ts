import {
  attributeReadings,
  type Consumer,
  type DeviceEnergy,
  type DeviceKind,
  discoverConsumers,
  type FoundConsumer,
  type GpuUseSource,
  kernelClockTicks,
  type NodeReading,
  noConsumerHierarchy,
  openFound,
  readNodeCpuTimes,
} from '../../attribution/index.js';
import { DomainType } from '../../platform/domains.js';
import type { Sysroot } from '../../platform/sysroot.js';
import type { Topology } from '../../platform/topology.js';
import type { NodeSample } from './node-metrics.js';
import type { ConsumerSource } from './settings.js';

/**
 * Per-consumer energy for the exporter: at every scrape the node's energy counters, /proc/stat
 * and each consumer's CPU counters are read, and the attribution engine (attribution)
 * splits the interval since the previous scrape. Consumers are found on the node each scrape
 * (attribution/discover.ts, as `joulegate top` finds them): Slurm jobs, users' sessions,
 * system services and scopes, as chosen, and cgroups named on the command line. Label
 * cardinality is bounded: at most `maxConsumers` are tracked (the energy of any other is
 * "unattributed"), and a consumer that is gone or got no energy for `expiryS` seconds is dropped
 * (its series disappear; if it comes back, its counter starts from 0 again, which Prometheus
 * reads as a counter restart).
 */
/** The id prefix discoverConsumers gives each source's consumers. */
const PREFIX: Record<ConsumerSource, string> = { slurm: 'slurm:', users: 'user:', system: 'system:' };

export interface ConsumerOptions {
  sources: readonly ConsumerSource[];
  /** Cgroup paths given by the administrator ("/system.slice/x.service"). */
  cgroups: readonly string[];
  expiryS: number;
  maxConsumers: number;
  /** GPU use (NVML per-process utilisation, GPU bindings); without it GPU energy is unattributed. */
  gpu?: GpuUseSource;
}

/** The exported per-consumer counters: joules by consumer id and device kind. */
export interface ConsumerSeries {
  consumer: string;
  device: DeviceKind;
  joules: number;
}

interface Tracked {
  consumer: Consumer;
  /** Monotonic s when it last got energy (or was found, before its first share). */
  activeS: number;
  /** µJ by device kind. */
  uj: Map<DeviceKind, bigint>;
}

/** What one scrape found about consumers, for the exporter's own metrics and log. */
export interface ConsumerScrape {
  tracked: number;
  /** Consumers found but not tracked because of maxConsumers. */
  untracked: number;
  /** Consumers that could not be opened, with why (first few). */
  problems: string[];
}

export class ConsumerEnergy {
  private readonly tracked = new Map<string, Tracked>();
  private readonly unattributed = new Map<DeviceKind, bigint>();
  private previous: NodeReading | undefined;
  private readonly usPerTick = 1e6 / kernelClockTicks();

  constructor(
    private readonly root: Sysroot,
    private readonly topology: Topology,
    private readonly options: ConsumerOptions,
  ) {}

  /** Consumers on the node now, of the chosen sources and the named cgroups. */
  private discover(): FoundConsumer[] {
    const prefixes = this.options.sources.map((source) => PREFIX[source]);
    const found = discoverConsumers(this.root).filter((f) => prefixes.some((p) => f.id.startsWith(p)));
    for (const path of this.options.cgroups)
      found.push({ id: `cgroup:${path}`, spec: { kind: 'cgroup', path } });
    return found;
  }

  /** Attributes the interval since the previous scrape; `sample` holds the energy counters. */
  update(sample: NodeSample): ConsumerScrape {
    const problems: string[] = [];
    const now = sample.timeS;
    let untracked = 0;
    for (const found of this.discover()) {
      if (this.tracked.has(found.id)) continue;
      if (this.tracked.size >= this.options.maxConsumers) {
        untracked++;
        continue;
      }
      const consumer: Consumer | undefined = openFound(this.root, found, (reason) => {
        if (problems.length < 5) problems.push(reason);
      });
      if (consumer !== undefined) this.tracked.set(found.id, { consumer, activeS: now, uj: new Map() });
    }
    // An idle node has no jobs, which is normal; a node without the cgroup tree never will.
    if (this.tracked.size === 0 && this.options.sources.length > 0) {
      const why = noConsumerHierarchy(this.root);
      if (why !== undefined) problems.push(`no consumers: ${why}`);
    }
    // Gone consumers get no share either, so one rule expires both the idle and the gone.
    for (const [id, t] of this.tracked) if (now - t.activeS > this.options.expiryS) this.tracked.delete(id);

    const consumers = [...this.tracked.values()].map((t) => ({
      id: t.consumer.id,
      cpu: t.consumer.read(),
      gpus: t.consumer.boundGpus?.(),
    }));
    const durationS = this.previous === undefined ? 0 : now - this.previous.timeS;
    const reading: NodeReading = {
      timeS: now,
      cpuTimes: readNodeCpuTimes(this.root, this.topology.numDomain(DomainType.Cpu), (reason) => {
        if (problems.length < 5) problems.push(`/proc/stat: ${reason}`);
      }),
      energy: deviceEnergy(sample),
      consumers,
      gpus: durationS > 0 ? this.options.gpu?.read(durationS, consumers) : undefined,
    };
    if (this.previous !== undefined && now > this.previous.timeS) {
      const shares = attributeReadings(this.previous, reading, {
        topology: this.topology,
        usPerTick: this.usPerTick,
        idlePolicy: 'none',
      });
      for (const s of shares) {
        if (s.status !== 'ok') continue;
        const kind = s.device.kind;
        this.unattributed.set(
          kind,
          (this.unattributed.get(kind) ?? 0n) + BigInt(s.unattributedUj + s.idleUj),
        );
        for (const c of s.consumers) {
          const t = this.tracked.get(c.id);
          if (t === undefined || c.uj <= 0) continue;
          t.uj.set(kind, (t.uj.get(kind) ?? 0n) + BigInt(c.uj));
          t.activeS = now;
        }
      }
    }
    this.previous = reading;
    return { tracked: this.tracked.size, untracked, problems };
  }

  /** Every tracked consumer's energy per device kind that has had a share. */
  series(): ConsumerSeries[] {
    const out: ConsumerSeries[] = [];
    for (const t of this.tracked.values()) {
      for (const [device, uj] of t.uj)
        out.push({ consumer: t.consumer.id, device, joules: Number(uj) / 1e6 });
    }
    return out;
  }

  /** Energy no tracked consumer got, per device kind (other processes, idle, unreadable usage). */
  unattributedSeries(): { device: DeviceKind; joules: number }[] {
    return [...this.unattributed].map(([device, uj]) => ({ device, joules: Number(uj) / 1e6 }));
  }
}

/** The devices the engine splits (packages, DRAM, GPUs; the board is not a device of one owner). */
function deviceEnergy(sample: NodeSample): DeviceEnergy[] {
  const out: DeviceEnergy[] = [];
  const value = new Map(sample.values.map((v) => [v.channel, v.value]));
  const channels = [
    ...sample.values.map((v) => v.channel),
    ...sample.failures.map((f) => f.channel),
    ...sample.pending,
  ];
  for (const channel of channels) {
    const kind = channel.rule.energy;
    if (kind === undefined || kind === 'board') continue;
    out.push({
      device: {
        kind,
        domain: kind === 'gpu' ? DomainType.Gpu : DomainType.Package,
        index: channel.index,
      },
      totalJ: value.get(channel) ?? Number.NaN,
    });
  }
  return out;
}
