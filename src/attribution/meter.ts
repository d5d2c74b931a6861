import { CounterSteps } from '../platform/counter-segments.js';
import type { Estimator } from '../platform/cpu-estimate.js';
import { DomainType, parseDomain } from '../platform/domains.js';
import { InvalidArgumentError } from '../platform/errors.js';
import { step, trapezoid } from '../platform/integration.js';
import type { EnergyMethod, SeriesSpec } from '../platform/signal-catalogue.js';
import type { Sysroot } from '../platform/sysroot.js';
import type { Consumer, CpuReading } from './consumers.js';
import { attributeInterval, type DeviceKind, type DeviceRef, type IntervalShares } from './engine.js';
import {
  type AttributionContext,
  type GpuUse,
  intervalInputs,
  type NodeReading,
  readNodeCpuTimes,
} from './interval.js';
import { AttributionTotals } from './totals.js';

/**
 * The live side of attribution: after each sample of the monitor's series, one reading of the
 * node (/proc/stat, every consumer, GPU use) and the interval's ΔE of every device from the same
 * samples the report sums, so the attributed energy of a group is the group's energy in the
 * report. Used by `monitor --attribute` (per round) and `top` (per period).
 */

/** Device groups whose energy is attributed: the ones with a per-device usage signal. */
export const ATTRIBUTED_GROUPS = ['cpu', 'ram', 'gpu'] as const;
export type AttributedGroup = (typeof ATTRIBUTED_GROUPS)[number];

/** One device's energy in the samples: which series, and how its interval ΔE is formed. */
export interface EnergySource {
  group: AttributedGroup;
  method: EnergyMethod;
  device: DeviceRef;
  /** Index of the series in the sampled series list. */
  series: number;
  /** For estimates: watts at 100 % utilisation. */
  fullLoadWatts?: number;
}

const KIND_OF: Record<AttributedGroup, DeviceKind> = { cpu: 'package', ram: 'dram', gpu: 'gpu' };

/**
 * The devices to attribute, from the sampled series: energy counters where a group has them,
 * else power; for the CPU with neither, the utilisation estimate (one device: the board's CPUs).
 */
export function energySources(series: readonly SeriesSpec[], estimator?: Estimator): EnergySource[] {
  const out: EnergySource[] = [];
  for (const group of ATTRIBUTED_GROUPS) {
    const of = (kind: 'energy' | 'power') =>
      series.flatMap((s, i) => (s.group === group && s.kind === kind ? [i] : []));
    const counters = of('energy');
    const chosen = counters.length > 0 ? counters : of('power');
    const method: EnergyMethod = counters.length > 0 ? 'counter' : 'power-integrated';
    for (const i of chosen) {
      const s = series[i]!;
      out.push({
        group,
        method,
        series: i,
        device: { kind: KIND_OF[group], domain: parseDomain(s.domain), index: s.index },
      });
    }
    if (chosen.length === 0 && group === 'cpu' && estimator) {
      const util = series.findIndex((s) => s.group === 'cpu' && s.kind === 'util');
      if (util >= 0) {
        out.push({
          group,
          method: 'estimated',
          series: util,
          device: { kind: 'package', domain: DomainType.Board, index: 0 },
          fullLoadWatts: estimator.fullLoadWatts,
        });
      }
    }
  }
  return out;
}

/** A consumer's reading as the GPU source sees it: its processes and the GPU minors bound to it. */
export interface GpuConsumer {
  id: string;
  cpu: CpuReading;
  gpus?: number[];
}

/** Reads GPU use for the interval ending now, given what the consumers' processes are. */
export interface GpuUseSource {
  read(durationS: number, consumers: readonly GpuConsumer[]): GpuUse[];
}

export interface MeterOptions {
  sources: readonly EnergySource[];
  /** Where /proc and the cgroup files are read. */
  root: Sysroot;
  context: AttributionContext;
  consumers?: readonly Consumer[];
  gpu?: GpuUseSource;
  /** Totals per group the shares are added to (shared across rounds); own ones by default. */
  totals?: Map<AttributedGroup, AttributionTotals>;
}

/** One device's interval ΔE from the samples, by the same rules as the report's group energy. */
class DeviceEnergy {
  private readonly counter?: CounterSteps;
  private lastTime = Number.NaN;
  private lastValue = Number.NaN;

  constructor(readonly source: EnergySource) {
    if (source.method === 'counter') this.counter = new CounterSteps();
  }

  /** ΔE since the previous reading; NaN when not measured (a gap, the first reading). */
  feed(t: number, v: number): number {
    let amount: number;
    if (this.counter) amount = this.counter.feed(t, v).segment?.amount ?? Number.NaN;
    else if (this.source.method === 'estimated')
      amount = step(this.lastTime, t, (v / 100) * this.source.fullLoadWatts!);
    else amount = trapezoid(this.lastTime, this.lastValue, t, v);
    this.lastTime = t;
    this.lastValue = v;
    return amount;
  }
}

export class AttributionMeter {
  readonly totals: Map<AttributedGroup, AttributionTotals>;
  /** Why a consumer's share could not be told, once per consumer and reason. */
  readonly notes = new Set<string>();
  /** Why the last reading has no node CPU times (/proc/stat unreadable); undefined when it has. */
  cpuTimesProblem: string | undefined;
  private readonly devices: DeviceEnergy[];
  private readonly consumers: Consumer[];
  private previous: NodeReading | undefined;

  constructor(private readonly options: MeterOptions) {
    this.devices = options.sources.map((s) => new DeviceEnergy(s));
    this.consumers = [...(options.consumers ?? [])];
    this.totals = options.totals ?? new Map();
    for (const g of ATTRIBUTED_GROUPS) if (!this.totals.has(g)) this.totals.set(g, new AttributionTotals());
  }

  /**
   * Adds a consumer from now on (the app, once started): it is read at once, so its first
   * interval counts its use from this moment.
   */
  addConsumer(consumer: Consumer): void {
    if (this.consumers.some((c) => c.id === consumer.id)) {
      throw new InvalidArgumentError(`consumer ${consumer.id} given twice`);
    }
    this.consumers.push(consumer);
    this.previous?.consumers.push({ id: consumer.id, cpu: consumer.read() });
  }

  /** Stops following a consumer (its cgroup is gone). */
  removeConsumer(id: string): void {
    const i = this.consumers.findIndex((c) => c.id === id);
    if (i >= 0) this.consumers.splice(i, 1);
  }

  get consumerIds(): string[] {
    return this.consumers.map((c) => c.id);
  }

  /**
   * One reading at sample time `timeS` with `values` the latest value of every sampled series:
   * the shares of every device for the interval since the previous reading (none at the first).
   */
  record(timeS: number, values: readonly number[]): IntervalShares[] {
    const { root, context } = this.options;
    const numCpu = context.topology.numDomain(DomainType.Cpu);
    const consumers = this.consumers.map((c) => ({ id: c.id, cpu: c.read(), gpus: c.boundGpus?.() }));
    this.cpuTimesProblem = undefined;
    const cpuTimes = readNodeCpuTimes(root, numCpu, (reason) => {
      this.cpuTimesProblem = reason;
    });
    const reading: NodeReading = { timeS, cpuTimes, energy: [], consumers };
    const energy = this.devices.map((d) => ({
      device: d.source.device,
      totalJ: d.feed(timeS, values[d.source.series]!),
    }));
    const before = this.previous;
    this.previous = reading;
    if (before === undefined || !(timeS > before.timeS)) return [];
    const duration = timeS - before.timeS;
    if (this.options.gpu) reading.gpus = this.options.gpu.read(duration, consumers);
    // ΔE per device is already the interval's: the earlier reading counts from 0.
    const from: NodeReading = { ...before, energy: energy.map((e) => ({ device: e.device, totalJ: 0 })) };
    const shares = intervalInputs(from, { ...reading, energy }, context).map(attributeInterval);
    shares.forEach((s, i) => {
      this.totals.get(this.devices[i]!.source.group)!.add(s);
      if (s.status === 'ok') for (const u of s.unknown) this.notes.add(u.reason);
    });
    return shares;
  }
}
