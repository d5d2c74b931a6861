import type { Report } from '../../monitor/model/report-model.js';
import { counterSegments } from '../../platform/counter-segments.js';
import { total } from '../../platform/integration.js';
import { type DeviceGroup, ENERGY_DEVICE_OF_GROUP } from '../../platform/signal-catalogue.js';
import {
  assembleJobReport,
  type DeviceWindowEnergy,
  energyCounterOf,
  type JobEnergyReport,
  type NodeWindowEnergy,
  nodeTotal,
  type PostFactors,
} from './job-energy.js';

/**
 * A multi-node job measured by `srun joulegate monitor -- app`: one monitor report per node
 * (its `host`), combined into the job report. Per device: the energy counters' wrap-corrected
 * increase over every kept round (the monitor's counter rule); a group measured by power only
 * is one row with its integrated energy. Nodes expected but without a report are gaps, as are
 * rounds the report left out, a failed run, and a second report of the same host (the node
 * would be counted twice: the longest run is kept). Several ranks of the job on one node leave
 * one sampler report and contributor reports without node energy (monitor/ranks.ts): only the
 * sampler's counts.
 */
const runtimeOf = (r: Report) => r.rounds.reduce((a, round) => a + round.metrics.host.runtime, 0);

function reportDevices(r: Report): DeviceWindowEnergy[] {
  const runtime = runtimeOf(r);
  const devices: DeviceWindowEnergy[] = [];
  const counted = new Set<DeviceGroup>();
  r.series.forEach((s, i) => {
    const kind = ENERGY_DEVICE_OF_GROUP[s.group];
    if (s.kind !== 'energy' || kind === undefined) return;
    let joules = 0;
    let samples = 0;
    for (const round of r.rounds) {
      const segments = counterSegments(round.times, round.values[i]!).segments;
      joules += segments.length > 0 ? total(segments) : Number.NaN;
      samples += round.times.length;
    }
    counted.add(s.group);
    const index = energyCounterOf(kind).label === 'board' ? '' : String(s.index);
    devices.push({ kind, index, joules, coveredS: Number.isFinite(joules) ? runtime : 0, gaps: [], samples });
  });
  for (const source of r.sources) {
    const kind = ENERGY_DEVICE_OF_GROUP[source.group];
    if (kind === undefined || counted.has(source.group) || source.method !== 'power-integrated') continue;
    let joules = 0;
    let coveredS = 0;
    for (const round of r.rounds) {
      const g = round.metrics.host.groups[source.group];
      joules += g?.energy ?? Number.NaN;
      coveredS += ((g?.coverage ?? 0) / 100) * round.metrics.host.runtime;
    }
    devices.push({ kind, index: '', joules, coveredS, gaps: [], samples: 0 });
  }
  return devices;
}

/** Whether a report measured energy or power (a rank's report that left the node to its sampler did not). */
const measuresEnergy = (r: Report) => r.series.some((s) => s.kind === 'energy' || s.kind === 'power');

/**
 * Of two reports of one host: the one that measured energy (a file without the `ranks` note, an
 * HDF5 one, may be another rank's), else the longer run.
 */
const preferred = (a: Report, b: Report) =>
  measuresEnergy(a) !== measuresEnergy(b) ? measuresEnergy(a) : runtimeOf(a) > runtimeOf(b);

/** Combines per-node monitor reports; `nodes`: the job's nodes, when known (missing ones are gaps). */
export function combineReports(
  reports: readonly { path: string; report: Report }[],
  nodes: readonly string[] | undefined,
  head: { job: string; source: string },
  factors: PostFactors,
  nowS = Date.now() / 1000,
): JobEnergyReport {
  const notes: string[] = [];
  const byHost = new Map<string, { path: string; report: Report }>();
  for (const entry of reports) {
    // Another rank's report of a node its sampler rank measured: the node counts once, there.
    const ranks = entry.report.ranks;
    if (ranks?.role === 'contributor') {
      notes.push(
        `${entry.report.host}: ${entry.path} is rank ${ranks.rank}'s; the node is counted once, from its sampler rank ${ranks.sampler.rank}'s report`,
      );
      continue;
    }
    const kept = byHost.get(entry.report.host);
    if (kept === undefined || preferred(entry.report, kept.report)) byHost.set(entry.report.host, entry);
    if (kept !== undefined) {
      notes.push(
        `${entry.report.host}: two reports (${kept.path}, ${entry.path}); the one that measured energy, ` +
          'else the longest run, is used, not both (one node, one count)',
      );
    }
  }
  const starts = [...byHost.values()].map(({ report }) => Date.parse(report.created) / 1000);
  const ends = [...byHost.values()].map(
    ({ report }) => Date.parse(report.created) / 1000 + runtimeOf(report),
  );
  const start = starts.length > 0 ? Math.min(...starts) : nowS;
  const end = ends.length > 0 ? Math.max(...ends) : nowS;
  const names = nodes ?? [...byHost.keys()].sort();
  for (const host of byHost.keys()) {
    if (!names.includes(host))
      notes.push(`${host}: a report of a node outside the job's node list; not counted`);
  }
  const perNode: NodeWindowEnergy[] = names.map((node) => {
    const entry = byHost.get(node);
    if (entry === undefined) return { node, joules: Number.NaN, rule: 'no data', coverage: 0, devices: [] };
    const { report } = entry;
    if (report.failed) notes.push(`${node}: the run failed (${report.failure}); its report is partial`);
    if ((report.omittedRounds ?? 0) > 0) {
      notes.push(`${node}: ${report.omittedRounds} round(s) left out of the report are not counted`);
    }
    const devices = reportDevices(report);
    const runtime = runtimeOf(report);
    const coverage =
      devices.length > 0 && runtime > 0 ? (Math.min(...devices.map((d) => d.coveredS)) / runtime) * 100 : 0;
    return { node, ...nodeTotal(devices), coverage, devices };
  });
  return assembleJobReport({ ...head, start, end }, perNode, factors, nowS, notes);
}
