import { type CpuTimes, parseProcStat } from '../backends/procfs/parse.js';
import { DomainType } from '../platform/domains.js';
import { errorMessage, InvalidArgumentError } from '../platform/errors.js';
import type { Sysroot } from '../platform/sysroot.js';
import type { Topology } from '../platform/topology.js';
import type { CpuReading } from './consumers.js';
import { type PlacedCpuTime, processTimeDelta, scalePlacement, spreadEvenly, timeOn } from './cpu-time.js';
import {
  attributeInterval,
  type ConsumerUsage,
  type DeviceRef,
  type IdlePolicy,
  type IntervalInput,
  type IntervalShares,
} from './engine.js';

/**
 * The sampler-facing side: two successive readings of the node (device energy counters, /proc/stat,
 * each consumer's CPU counters, GPU use) become the engine's input for every device. The monitor
 * takes a NodeReading each period and calls `attributeReadings(previous, current, context)`.
 */

/** A device's wrap-corrected cumulative energy at a reading, J; NaN when it could not be read. */
export interface DeviceEnergy {
  device: DeviceRef;
  totalJ: number;
}

/** GPU use in the interval ending at a reading (NVML process utilisation samples, or a binding). */
export interface GpuUse {
  /** GPU index (the topology's gpu domain index). */
  index: number;
  /** The GPU's own utilisation over the interval, fraction·s; undefined when unknown. */
  deviceUtilSeconds?: number;
  /** A consumer bound to the whole GPU (a job's GPU binding): it gets all the dynamic energy. */
  owner?: string;
  /** Utilisation·s of the consumers' processes on this GPU; a consumer not listed used none of it. */
  consumers: { id: string; utilSeconds: number }[];
}

export interface NodeReading {
  /** Monotonic time of the reading, s. */
  timeS: number;
  /** The node's /proc/stat; undefined when it could not be read. */
  cpuTimes?: CpuTimes;
  energy: DeviceEnergy[];
  consumers: { id: string; cpu: CpuReading }[];
  gpus?: GpuUse[];
}

export interface AttributionContext {
  topology: Topology;
  /** µs per /proc clock tick (10,000 at USER_HZ 100). */
  usPerTick: number;
  idlePolicy: IdlePolicy;
  /** Idle power of a device, W (measured or configured); undefined: no idle model for it. */
  idlePowerW?: (device: DeviceRef) => number | undefined;
}

/** /proc/stat of the node under the sysroot, or undefined with the reason in `onError`. */
export function readNodeCpuTimes(
  root: Sysroot,
  numCpu: number,
  onError?: (reason: string) => void,
): CpuTimes | undefined {
  try {
    return parseProcStat(root.readText('/proc/stat'), numCpu);
  } catch (err) {
    onError?.(errorMessage(err));
    return undefined;
  }
}

type Placement = { placed: PlacedCpuTime } | { reason: string };

/**
 * Where a consumer's CPU time of the interval ran. A cgroup's time is its exact counter
 * (usage_usec growth), placed on CPUs by where its processes ran, or spread over its cpuset
 * when no process of it was seen running; a process tree's time is its processes' growth.
 */
export function consumerPlacement(
  before: CpuReading | undefined,
  after: CpuReading,
  topology: Topology,
  usPerTick: number,
): Placement {
  if (!after.ok) return { reason: after.reason };
  if (before === undefined) return { reason: 'no earlier reading of this consumer' };
  if (!before.ok) return { reason: before.reason };
  const numCpu = topology.numDomain(DomainType.Cpu);
  const fromProcesses = processTimeDelta(before.processes, after.processes, numCpu, usPerTick);
  if (after.cgroup === undefined || before.cgroup === undefined) return { placed: fromProcesses };
  const grownUs = after.cgroup.usageUs - before.cgroup.usageUs;
  if (grownUs < 0) return { reason: 'cgroup CPU time went backwards (the cgroup was recreated)' };
  const seen = fromProcesses.unplacedUs + fromProcesses.perCpuUs.reduce((a, b) => a + b, 0);
  if (seen > 0) return { placed: scalePlacement(fromProcesses, grownUs) };
  const cpus = after.cgroup.cpus ?? topology.cpusOf(DomainType.Board, 0);
  return { placed: spreadEvenly(grownUs, cpus, numCpu) };
}

/** Busy µs per CPU between two /proc/stat readings; NaN where unknown (offline, counters reset). */
function busyPerCpu(
  before: CpuTimes | undefined,
  after: CpuTimes | undefined,
  usPerTick: number,
  numCpu: number,
): Float64Array {
  const out = new Float64Array(numCpu).fill(Number.NaN);
  if (before === undefined || after === undefined) return out;
  for (let c = 0; c < numCpu; c++) {
    const d = (after.busy[c] ?? Number.NaN) - (before.busy[c] ?? Number.NaN);
    if (d >= 0) out[c] = d * usPerTick;
  }
  return out;
}

function deviceKey(d: DeviceRef): string {
  return `${d.kind}:${d.domain}:${d.index}`;
}

/** The engine's input for every device of `after`, for the interval from `before` to `after`. */
export function intervalInputs(
  before: NodeReading,
  after: NodeReading,
  context: AttributionContext,
): IntervalInput[] {
  const durationS = after.timeS - before.timeS;
  if (!(durationS > 0)) {
    throw new InvalidArgumentError(`readings at ${before.timeS} s and ${after.timeS} s: time must advance`);
  }
  const { topology, usPerTick } = context;
  const numCpu = topology.numDomain(DomainType.Cpu);
  const earlier = new Map(before.consumers.map((c) => [c.id, c.cpu]));
  const placements = after.consumers.map((c) => ({
    id: c.id,
    placement: consumerPlacement(earlier.get(c.id), c.cpu, topology, usPerTick),
  }));
  const busy = busyPerCpu(before.cpuTimes, after.cpuTimes, usPerTick, numCpu);
  const energyBefore = new Map(before.energy.map((e) => [deviceKey(e.device), e.totalJ]));

  return after.energy.map(({ device, totalJ }) => {
    const energyJ = totalJ - (energyBefore.get(deviceKey(device)) ?? Number.NaN);
    const common = {
      device,
      energyJ,
      durationS,
      idlePowerW: context.idlePowerW?.(device),
      idlePolicy: context.idlePolicy,
    };
    if (device.kind === 'gpu') return { ...common, ...gpuUsage(device.index, after.gpus, placements) };
    const cpus = topology.cpusOf(device.domain, device.index);
    let deviceUsage = 0;
    for (const c of cpus) deviceUsage += busy[c] ?? Number.NaN;
    const consumers = placements.map(
      ({ id, placement }): ConsumerUsage =>
        'placed' in placement
          ? { id, usage: timeOn(placement.placed, cpus) }
          : { id, usage: Number.NaN, reason: placement.reason },
    );
    return { ...common, consumers, deviceUsage };
  });
}

function gpuUsage(
  index: number,
  gpus: readonly GpuUse[] | undefined,
  placements: readonly { id: string }[],
): { consumers: ConsumerUsage[]; deviceUsage?: number } {
  const use = gpus?.find((g) => g.index === index);
  if (use === undefined) {
    return {
      consumers: placements.map(({ id }) => ({
        id,
        usage: Number.NaN,
        reason: `no use sample of GPU ${index}`,
      })),
    };
  }
  if (use.owner !== undefined) {
    return { consumers: placements.map(({ id }) => ({ id, usage: id === use.owner ? 1 : 0 })) };
  }
  const byId = new Map(use.consumers.map((c) => [c.id, c.utilSeconds]));
  return {
    consumers: placements.map(({ id }) => ({ id, usage: byId.get(id) ?? 0 })),
    deviceUsage: use.deviceUtilSeconds,
  };
}

/** Shares of every device for the interval between two readings. */
export function attributeReadings(
  before: NodeReading,
  after: NodeReading,
  context: AttributionContext,
): IntervalShares[] {
  return intervalInputs(before, after, context).map(attributeInterval);
}
