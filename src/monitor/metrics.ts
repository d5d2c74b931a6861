import { counterIncrease, counterSegments } from '../platform/counter-segments.js';
import type { Estimator } from '../platform/cpu-estimate.js';
import {
  amountWithin,
  covered,
  type Segments,
  stepSegments,
  timeWeightedMean,
  total,
  trapezoidSegments,
} from '../platform/integration.js';
import type { SampleSet } from '../platform/sample-set.js';
import {
  DEVICE_GROUPS,
  type DeviceGroup,
  type EnergyMethod,
  type SeriesSpec,
} from '../platform/signal-catalogue.js';
import { type EnergyPart, hostEnergyUnder, hostTotal } from './model/host-total.js';
import { pairRegionEvents } from './model/regions-pairing.js';
import type {
  GroupMetrics,
  HostMetrics,
  RegionCallMetrics,
  RegionEvent,
  RoundMetrics,
} from './model/report-model.js';

/** perun's [post-processing] settings. */
export interface PostProcessing {
  powerOverhead: number;
  pue: number;
  emissionsFactor: number;
  priceFactor: number;
}

interface GroupSegments {
  group: DeviceGroup;
  method: EnergyMethod;
  /** The series that measured something, and their segments (same order). */
  specs: SeriesSpec[];
  perSeries: Segments[];
}

const J_PER_KWH = 3.6e6;

/**
 * Energy segments of each group from the series that were read in this round: what was read
 * decides. A series with no good reading is not measured (it is listed as not readable); one
 * read but with no interval (no two good readings) has unknown energy, NaN. A group with no
 * series read has no energy.
 */
function energySegmentsOf(
  specs: readonly SeriesSpec[],
  data: SampleSet,
  problems: string[],
): GroupSegments[] {
  const out: GroupSegments[] = [];
  for (const group of DEVICE_GROUPS) {
    const idx = specs.map((s, i) => (s.group === group ? i : -1)).filter((i) => i >= 0);
    const counters = idx.filter((i) => specs[i]!.kind === 'energy');
    const powers = idx.filter((i) => specs[i]!.kind === 'power');
    const method: EnergyMethod = counters.length > 0 ? 'counter' : 'power-integrated';
    const g: GroupSegments = { group, method, specs: [], perSeries: [] };
    for (const i of counters.length > 0 ? counters : powers) {
      let segments: Segments;
      if (method === 'counter') {
        const r = counterSegments(data.times, data.values[i]!);
        problems.push(...r.anomalies.map((a) => `${specs[i]!.id}: ${a}`));
        segments = r.segments;
      } else segments = trapezoidSegments(data.times, data.values[i]!);
      if (data.values[i]!.some(Number.isFinite)) {
        g.specs.push(specs[i]!);
        g.perSeries.push(segments);
      }
    }
    if (g.perSeries.length > 0) out.push(g);
  }
  return out;
}

/** Estimated CPU power from utilisation (percent), used only when no CPU source measured. */
function estimatedCpuSegments(
  specs: readonly SeriesSpec[],
  data: SampleSet,
  measured: readonly GroupSegments[],
  estimator: Estimator | undefined,
): GroupSegments | undefined {
  if (!estimator || measured.some((g) => g.group === 'cpu')) return undefined;
  const i = specs.findIndex((s) => s.group === 'cpu' && s.kind === 'util');
  if (i < 0) return undefined;
  const watts = data.values[i]!.map((percent) => (percent / 100) * estimator.fullLoadWatts);
  return {
    group: 'cpu',
    method: 'estimated',
    specs: [specs[i]!],
    perSeries: [stepSegments(data.times, watts)],
  };
}

function levelMean(
  specs: readonly SeriesSpec[],
  data: SampleSet,
  group: DeviceGroup,
  kind: 'util' | 'memory',
) {
  // Utilisation is a rate over the interval before each reading; memory is a level.
  const segmentsOf = kind === 'util' ? stepSegments : trapezoidSegments;
  const means = specs.flatMap((s, i) =>
    s.group === group && s.kind === kind ? [timeWeightedMean(segmentsOf(data.times, data.values[i]!))] : [],
  );
  if (means.length === 0) return undefined;
  const sum = means.reduce((a, b) => a + b, 0);
  return kind === 'memory' ? sum : sum / means.length;
}

/** Utilisation segments of each `util` series of a group. */
function utilSegments(specs: readonly SeriesSpec[], data: SampleSet, group: DeviceGroup): Segments[] {
  return specs.flatMap((s, i) =>
    s.group === group && s.kind === 'util' ? [stepSegments(data.times, data.values[i]!)] : [],
  );
}

/** Mean utilisation (percent) of the series inside [a, b]; NaN when one of them has no reading there. */
function utilWithin(perSeries: readonly Segments[], a: number, b: number): number {
  if (perSeries.length === 0) return Number.NaN;
  let sum = 0;
  for (const segs of perSeries) {
    const part = amountWithin(segs, a, b);
    if (!(part.seconds > 0)) return Number.NaN;
    sum += part.amount / part.seconds;
  }
  return sum / perSeries.length;
}

function byteTotal(
  specs: readonly SeriesSpec[],
  data: SampleSet,
  group: DeviceGroup,
  direction: 'read' | 'write',
) {
  const vals = specs
    .map((s, i) => (s.group === group && s.kind === 'bytes' && s.direction === direction ? i : -1))
    .filter((i) => i >= 0)
    .map((i) => counterIncrease(data.times, data.values[i]!));
  return vals.length === 0 ? undefined : vals.reduce((a, b) => a + b, 0);
}

/** A series' energy over the round: NaN when it has no interval (never 0). */
const seriesEnergy = (segs: Segments) => (segs.length > 0 ? total(segs) : Number.NaN);

/** Energy of one series' segments inside [a, b]; NaN when they cover none of it. */
function energyWithin(segs: Segments, a: number, b: number): number {
  const part = amountWithin(segs, a, b);
  return part.seconds > 0 || a === b ? part.amount : Number.NaN;
}

/** Energy of the groups inside [a, b]; NaN when a series covers none of it. */
function sumWithin(groups: readonly GroupSegments[], a: number, b: number): number {
  if (groups.length === 0) return Number.NaN;
  let sum = 0;
  for (const g of groups) for (const segs of g.perSeries) sum += energyWithin(segs, a, b);
  return sum;
}

/** Each measured series' energy inside [a, b] (all of the round by default), for the host rule. */
function energyParts(groups: readonly GroupSegments[], a = -Infinity, b = Infinity): EnergyPart[] {
  return groups.flatMap((g) =>
    g.perSeries.map((segs, k) => ({
      group: g.group,
      energy: a === -Infinity && b === Infinity ? seriesEnergy(segs) : energyWithin(segs, a, b),
      outsidePlatform: g.specs[k]!.outsidePlatform === true,
    })),
  );
}

/**
 * All metrics of one round from its samples. `runtime` is the app's own runtime (spawn to exit
 * on the shared clock); sample timestamps are relative to the same origin.
 */
export function roundMetrics(
  specs: readonly SeriesSpec[],
  data: SampleSet,
  runtime: number,
  events: readonly RegionEvent[],
  post: PostProcessing,
  estimator?: Estimator,
): RoundMetrics {
  const problems: string[] = [];
  const energyGroups = energySegmentsOf(specs, data, problems);
  const estimated = estimatedCpuSegments(specs, data, energyGroups, estimator);
  const groups: Partial<Record<DeviceGroup, GroupMetrics>> = {};
  for (const g of [...energyGroups, ...(estimated ? [estimated] : [])]) {
    // A series with no covered interval has unknown energy: NaN, never 0.
    const energy = g.perSeries.reduce((a, segs) => a + seriesEnergy(segs), 0);
    const power = g.perSeries.reduce(
      (a, segs) => a + (covered(segs) > 0 ? timeWeightedMean(segs) : Number.NaN),
      0,
    );
    const span = data.times.length > 1 ? data.times.at(-1)! - data.times[0]! : 0;
    const coverage = span > 0 ? Math.min(...g.perSeries.map((s) => covered(s) / span)) * 100 : 0;
    groups[g.group] = { energy, power, method: g.method, coverage };
  }
  for (const group of DEVICE_GROUPS) {
    const util = levelMean(specs, data, group, 'util');
    const memory = levelMean(specs, data, group, 'memory');
    const readBytes = byteTotal(specs, data, group, 'read');
    const writeBytes = byteTotal(specs, data, group, 'write');
    if ([util, memory, readBytes, writeBytes].every((x) => x === undefined)) continue;
    const g = groups[group] ?? { energy: Number.NaN, power: Number.NaN };
    Object.assign(g, { util, memory, readBytes, writeBytes });
    groups[group] = g;
  }

  const measured = hostTotal(energyParts(energyGroups));
  const energy = measured.energy + post.powerOverhead * runtime;
  // The estimate covers the sampled span, as measured energy does (one sample before the spawn,
  // the last after the exit and the region channel's drain), so its power is its mean over that
  // span: never above the model's maximum. Over the app's runtime, short apps showed more.
  const estimatedSegs = estimated?.perSeries[0];
  const estimatedEnergy = estimatedSegs && estimatedSegs.length > 0 ? total(estimatedSegs) : Number.NaN;
  const estimatedPower =
    estimatedSegs && covered(estimatedSegs) > 0 ? timeWeightedMean(estimatedSegs) : Number.NaN;
  const facilityEnergy = energy * post.pue;
  const kwh = facilityEnergy / J_PER_KWH;
  const host: HostMetrics = {
    runtime,
    energy,
    power: energy / runtime,
    estimatedEnergy,
    estimatedPower,
    facilityEnergy,
    co2: kwh * post.emissionsFactor,
    money: kwh * post.priceFactor,
    groups,
    total: measured.total,
  };

  const paired = pairRegionEvents(events, runtime);
  const cpuUtil = utilSegments(specs, data, 'cpu');
  const gpuUtil = utilSegments(specs, data, 'gpu');
  problems.push(...paired.problems);
  const regions = paired.calls.map((call): RegionCallMetrics => {
    const groupEnergy: Partial<Record<DeviceGroup, number>> = {};
    for (const g of energyGroups) groupEnergy[g.group] = sumWithin([g], call.start, call.stop);
    const callRuntime = call.stop - call.start;
    const callParts = energyParts(energyGroups, call.start, call.stop);
    const e = hostEnergyUnder(measured.total.rule, callParts) + post.powerOverhead * callRuntime;
    return {
      ...call,
      runtime: callRuntime,
      energy: e,
      power: callRuntime > 0 ? e / callRuntime : Number.NaN,
      estimatedEnergy: estimated ? sumWithin([estimated], call.start, call.stop) : Number.NaN,
      groupEnergy,
      cpuUtil: utilWithin(cpuUtil, call.start, call.stop),
      gpuUtil: utilWithin(gpuUtil, call.start, call.stop),
    };
  });
  return { host, regions, problems };
}
