import { setTimeout as sleep } from 'node:timers/promises';
import { CGROUP_ROOT } from '../attribution/cgroup.js';
import { discoverConsumers, noConsumerHierarchy, openFound } from '../attribution/discover.js';
import type { IdlePolicy, IntervalShares } from '../attribution/engine.js';
import { kernelClockTicks } from '../attribution/kernel-files.js';
import {
  type AttributedGroup,
  AttributionMeter,
  type EnergySource,
  energySources,
  type GpuUseSource,
} from '../attribution/meter.js';
import { cpuIdlePower, gpuUseOf } from '../attribution/run.js';
import { cpuEstimator } from '../platform/cpu-estimate.js';
import { JoulegateError } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import type { SampleSet } from '../platform/sample-set.js';
import type { Sysroot } from '../platform/sysroot.js';
import { clockMs } from './clock.js';
import { hostCpus } from './metadata.js';
import { Sampler } from './sampler.js';
import { selectSeries } from './signals.js';

/**
 * `joulegate top`: every period, the node's power split among the consumers found under the
 * sysroot (Slurm jobs, users, system units), with the unattributed and idle parts, by the same
 * meter as `monitor --attribute`.
 */

export interface TopRow {
  id: string;
  /** Its use could not be read in some device (permission, it is gone): its energy is unattributed. */
  unknown?: string;
  /** Mean power in the period, W, summed over the groups; per group in `byGroup`. */
  watts: number;
  byGroup: Partial<Record<AttributedGroup, number>>;
}

export interface TopTable {
  /** Length of the period the table covers, s. */
  durationS: number;
  /** Consumers by power, highest first (at most `limit`; the rest summed in `rest`). */
  consumers: TopRow[];
  /** The consumers beyond the limit, summed; undefined when none was cut. */
  rest?: TopRow & { count: number };
  unattributed: TopRow;
  idle: TopRow;
  node: TopRow;
  /** How each group's energy was obtained. */
  sources: { group: AttributedGroup; method: string }[];
  /** Groups whose energy was not measured in this period. */
  missing: AttributedGroup[];
  /** Why the table lists no consumer (no cgroup hierarchy, none found, none readable). */
  noConsumers?: string;
  /** Why the node's CPU time is unknown (/proc/stat unreadable): consumers' shares are uncertain. */
  cpuTimesProblem?: string;
}

export interface TopOptions {
  pio: PlatformIO;
  root: Sysroot;
  periodS: number;
  /** Tables to produce; undefined: until `signal` aborts. */
  iterations?: number;
  /** Rows of consumers shown. */
  limit: number;
  idleShare: IdlePolicy;
  /** Idle power of the CPU packages, W: one for all or one per package. */
  cpuIdleW?: readonly number[];
  /** Package TDP for the CPU estimate where nothing is measured (0: the model table). */
  estimateTdp: number;
  gpu?: GpuUseSource;
  signal?: AbortSignal;
  onTable: (table: TopTable) => void;
  /** One line about something left out: a consumer that could not be followed, a source a domain lacks. */
  warn?: (line: string) => void;
}

/** At most this many consumers are followed (each costs reading its processes every period). */
export const MAX_FOLLOWED = 512;

const emptyRow = (id: string): TopRow => ({ id, watts: 0, byGroup: {} });

function addWatts(row: TopRow, group: AttributedGroup, w: number): void {
  row.watts += w;
  row.byGroup[group] = (row.byGroup[group] ?? 0) + w;
}

const addTo = (row: TopRow, group: AttributedGroup, uj: number, durationS: number) =>
  addWatts(row, group, uj / 1e6 / durationS);

/** One period's shares as a table. */
export function topTable(
  shares: readonly IntervalShares[],
  sources: readonly EnergySource[],
  consumerIds: readonly string[],
  limit: number,
): TopTable {
  const rows = new Map(consumerIds.map((id) => [id, emptyRow(id)]));
  const unattributed = emptyRow('(unattributed)');
  const idle = emptyRow('(idle)');
  const node = emptyRow('node');
  const missing = new Set<AttributedGroup>();
  const durationS = shares[0]?.durationS ?? Number.NaN;
  shares.forEach((s, i) => {
    const group = sources[i]!.group;
    if (s.status === 'missing') {
      missing.add(group);
      return;
    }
    addTo(node, group, s.measuredUj, s.durationS);
    addTo(unattributed, group, s.unattributedUj, s.durationS);
    addTo(idle, group, s.idleUj, s.durationS);
    for (const c of s.consumers) {
      const row = rows.get(c.id);
      if (row) addTo(row, group, c.uj, s.durationS);
    }
    for (const u of s.unknown) {
      const row = rows.get(u.id);
      if (row) row.unknown ??= u.reason;
    }
  });
  const sorted = [...rows.values()].sort((a, b) => b.watts - a.watts || a.id.localeCompare(b.id));
  const cut = sorted.slice(limit);
  let rest: (TopRow & { count: number }) | undefined;
  if (cut.length > 0) {
    rest = { ...emptyRow(`(${cut.length} more)`), count: cut.length };
    for (const r of cut)
      for (const [g, w] of Object.entries(r.byGroup)) addWatts(rest, g as AttributedGroup, w);
  }
  const methods = new Map(sources.map((s) => [s.group, s.method]));
  return {
    durationS,
    consumers: sorted.slice(0, limit),
    rest,
    unattributed,
    idle,
    node,
    sources: [...methods].map(([group, method]) => ({ group, method })),
    missing: [...missing],
  };
}

/**
 * Follows what appeared since the last period and drops what is gone. Returns why nothing is
 * followed, when nothing is: the table says so rather than showing an empty list.
 */
function refreshConsumers(
  meter: AttributionMeter,
  root: Sysroot,
  warn?: (line: string) => void,
): string | undefined {
  const found = discoverConsumers(root).slice(0, MAX_FOLLOWED);
  const ids = new Set(found.map((f) => f.id));
  for (const id of meter.consumerIds) if (!ids.has(id)) meter.removeConsumer(id);
  const followed = new Set(meter.consumerIds);
  let firstError: string | undefined;
  for (const f of found) {
    if (followed.has(f.id)) continue;
    const c = openFound(root, f, (reason) => {
      firstError ??= reason;
      warn?.(reason);
    });
    if (c) meter.addConsumer(c);
  }
  if (meter.consumerIds.length > 0) return undefined;
  if (found.length > 0) {
    const cgroups = found.length === 1 ? 'cgroup' : 'cgroups';
    return `${found.length} consumer ${cgroups} found, none readable (${firstError})`;
  }
  return (
    noConsumerHierarchy(root) ??
    `no Slurm job, user session (user.slice/user-UID.slice) or system unit (system.slice) cgroup under ${CGROUP_ROOT}`
  );
}

export async function runTop(opts: TopOptions): Promise<void> {
  const { pio, root } = opts;
  const { series, notes } = selectSeries(pio);
  // The same account of what is missing (a package without RAPL) as monitor and sensors give.
  for (const note of notes) opts.warn?.(`not attributed: ${note}`);
  const cpus = hostCpus(pio);
  const estimator = cpuEstimator({ tdp: opts.estimateTdp, threads: 0 }, cpus.model, cpus.count);
  const sources = energySources(series, estimator);
  if (sources.length === 0) {
    throw new JoulegateError(
      'no CPU, RAM or GPU energy source on this node and no CPU model to estimate from: nothing to ' +
        'attribute (give the package TDP with --estimate-tdp W; `joulegate sensors` says what is missing)',
    );
  }
  const meter = new AttributionMeter({
    sources,
    root,
    gpu: opts.gpu ?? gpuUseOf(pio, (line) => opts.warn?.(line)),
    context: {
      topology: pio.topology,
      usPerTick: 1e6 / kernelClockTicks(),
      idlePolicy: opts.idleShare,
      idlePowerW: cpuIdlePower(opts.cpuIdleW),
    },
  });
  const sampler = new Sampler(pio, series);
  const data: SampleSet = { originMs: clockMs(), times: [], values: series.map(() => []) };
  const reading = async () => {
    // Only the latest sample is needed: the meter keeps what it needs between readings.
    data.times.length = 0;
    for (const v of data.values) v.length = 0;
    await sampler.read(data);
    return meter.record(
      data.times[0]!,
      data.values.map((v) => v[0]!),
    );
  };
  let noConsumers = refreshConsumers(meter, root, opts.warn);
  await reading();
  const periodMs = opts.periodS * 1000;
  let deadline = clockMs();
  for (let k = 0; opts.iterations === undefined || k < opts.iterations; k++) {
    deadline += periodMs;
    try {
      await sleep(Math.max(0, deadline - clockMs()), undefined, { signal: opts.signal });
    } catch {
      return; // aborted
    }
    const shares = await reading();
    if (shares.length > 0 || sources.length === 0) {
      const table = topTable(shares, sources, meter.consumerIds, opts.limit);
      const { cpuTimesProblem } = meter;
      opts.onTable({
        ...table,
        ...(noConsumers !== undefined ? { noConsumers } : {}),
        ...(cpuTimesProblem !== undefined ? { cpuTimesProblem } : {}),
      });
    }
    noConsumers = refreshConsumers(meter, root, opts.warn);
  }
}
