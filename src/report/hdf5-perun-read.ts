import { pairRegionEvents } from '../monitor/model/regions-pairing.js';
import type {
  GroupMetrics,
  HostMetrics,
  RegionCallMetrics,
  RegionEvent,
  RegionSummary,
  Report,
  RoundReport,
  SourceInfo,
  Stat,
} from '../monitor/model/report-model.js';
import { stat } from '../monitor/model/round-stats.js';
import { reportUnits } from '../monitor/model/units.js';
import type { Diagnostic } from '../platform/backend.js';
import { JoulegateError } from '../platform/errors.js';
import type { DeviceGroup, SeriesKind, SeriesSpec } from '../platform/signal-catalogue.js';
import {
  type GROUP_VALUE_KEYS,
  type Group,
  groupValuePlace,
  MULTI_RUN_ATTRS,
  NODE_TYPE,
} from './hdf5-layout.js';
import {
  type Attrs,
  attrsOf,
  idOf,
  num,
  optionalText,
  type TreeReader,
  textAttrsExcept,
} from './hdf5-tree.js';

/*
 * Files perun wrote (docs/reference/perun-files.md#data-tree, #hdf5-file): APP → MULTI_RUN (one per perun
 * invocation, the file keeps them all) → RUN (per round) → NODE (per host) → DEVICE_GROUP →
 * SENSOR. Values are scaled by their `mag` to SI units. perun keeps no per-call region energy
 * and no estimates: those stay NaN; its region Stats become the region summary.
 */

/** perun's DeviceType → joulegate's device group (perun's `other` is the board). */
const GROUP_OF: Readonly<Record<string, DeviceGroup>> = {
  cpu: 'cpu',
  gpu: 'gpu',
  ram: 'ram',
  disk: 'disk',
  net: 'net',
  other: 'board',
};

/** The MULTI_RUN metadata perun writes besides its flattened `section.option` configuration. */
const PERUN_RUN_ATTRS = ['app_name', 'perun_version', 'execution_dt', 'n_runs'];

const magOf = (a: Attrs, where: string) => num(a, 'mag', where) ?? 1;

/**
 * Whether the tree is perun's: a MULTI_RUN without the attributes joulegate writes on its own.
 * Reads only the names and `type` values it needs (a damaged attribute elsewhere is left to the
 * reader to report).
 */
export function isPerunTree(reader: TreeReader, file: Group): boolean {
  const app = file.keys()[0];
  if (app === undefined) return false;
  const root = reader.optionalGroup(file, app);
  const nodes = root && reader.optionalGroup(root, 'nodes');
  const first = nodes?.keys()[0];
  const multi = nodes && first !== undefined ? reader.optionalGroup(nodes, first) : undefined;
  if (!root || !multi) return false;
  const typeOfNode = (g: Group) => Number(g.attrs.type?.value);
  return (
    typeOfNode(root) === NODE_TYPE.APP &&
    typeOfNode(multi) === NODE_TYPE.MULTI_RUN &&
    !(MULTI_RUN_ATTRS.samplingPeriod in multi.attrs)
  );
}

/** A perun `*_dt` (naive local ISO time) as an ISO time with a zone. */
function isoOf(naive: string | undefined): string {
  const d = new Date(naive ?? '');
  return Number.isNaN(d.getTime()) ? (naive ?? '') : d.toISOString();
}

class PerunTree {
  readonly notes: Diagnostic[] = [];

  constructor(private readonly reader: TreeReader) {}

  /** A node's `metrics/` group (none on a node that has no metrics). */
  metricsOf(node: Group): Group | undefined {
    return this.reader.optionalGroup(node, 'metrics');
  }

  /** The attributes of metric `name` in `metrics`, value and Stats scaled to SI units. */
  metric(metrics: Group | undefined, name: string): Attrs | undefined {
    const m = metrics && this.reader.optionalGroup(metrics, name);
    if (!m) return undefined;
    const a = attrsOf(m);
    const mag = magOf(a, m.path);
    const scaled: Attrs = {};
    for (const k of ['value', 'sum', 'mean', 'std', 'min', 'max']) {
      const v = num(a, k, m.path);
      if (v !== undefined) scaled[k] = v * mag;
    }
    return scaled;
  }

  value(node: Group, name: string): number | undefined {
    return this.metric(this.metricsOf(node), name)?.value as number | undefined;
  }

  stats(metrics: Group | undefined, name: string): Stat {
    const m = this.metric(metrics, name);
    if (!m || m.mean === undefined) return stat([]);
    const of = (k: string) => (m[k] as number | undefined) ?? Number.NaN;
    return { mean: of('mean'), std: of('std'), min: of('min'), max: of('max'), sum: of('sum') };
  }

  /** The MULTI_RUN asked for, or the latest by perun's `execution_dt`. */
  multiRun(app: Group, runId: string | undefined): Group {
    const runs = this.reader.children(this.reader.group(app, 'nodes'));
    if (runs.length === 0) throw new JoulegateError(`${app.path}: no runs in this perun file`);
    if (runId !== undefined) {
      const found = runs.find((r) => idOf(r) === runId);
      if (!found)
        throw new JoulegateError(
          `no run ${runId} in this perun file (it has ${runs.map((r) => idOf(r)).join(', ')})`,
        );
      return found;
    }
    const when = (r: Group) => optionalText(attrsOf(r), 'execution_dt', r.path) ?? '';
    return runs.reduce((latest, r) => (when(r) > when(latest) ? r : latest));
  }

  /** The sensors of a host whose raw data joulegate can show, in tree order. */
  series(host: Group): { spec: SeriesSpec; sensor: Group }[] {
    const out: { spec: SeriesSpec; sensor: Group }[] = [];
    for (const dg of this.reader.children(this.reader.group(host, 'nodes'))) {
      const group = GROUP_OF[optionalText(attrsOf(dg), 'device_type', dg.path) ?? idOf(dg)];
      if (!group) continue;
      this.reader.children(this.reader.group(dg, 'nodes')).forEach((sensor, index) => {
        const raw = this.reader.optionalGroup(sensor, 'raw_data');
        if (!raw || raw.get('values') === null) return;
        const unit = optionalText(attrsOf(this.reader.dataset(raw, 'values')), 'unit', sensor.path);
        const kind = kindOf(unit, group);
        const id = idOf(sensor);
        if (!kind) {
          this.notes.push({ backend: 'perun', signal: id, reason: `raw data in "${unit}" is not shown` });
          return;
        }
        const direction = kind === 'bytes' ? (/READ/i.test(id) ? 'read' : 'write') : undefined;
        const spec: SeriesSpec = {
          id,
          signal: id,
          domain: group,
          index,
          group,
          kind,
          backend: 'perun',
          ...(direction ? { direction } : {}),
        };
        out.push({ spec, sensor });
      });
    }
    return out;
  }

  /** A dataset of `raw_data`, scaled by its `mag`. */
  scaled(raw: Group, name: string): number[] {
    const mag = magOf(attrsOf(this.reader.dataset(raw, name)), `${raw.path}/${name}`);
    return this.reader.numbers(raw, name).map((v) => v * mag);
  }

  groups(host: Group): Partial<Record<DeviceGroup, GroupMetrics>> {
    const out: Partial<Record<DeviceGroup, GroupMetrics>> = {};
    for (const dg of this.reader.children(this.reader.group(host, 'nodes'))) {
      const group = GROUP_OF[optionalText(attrsOf(dg), 'device_type', dg.path) ?? idOf(dg)];
      if (!group) continue;
      const value = (key: (typeof GROUP_VALUE_KEYS)[number]) => {
        const metric = groupValuePlace(group, key).metric;
        return metric === undefined ? undefined : this.value(dg, metric.toUpperCase());
      };
      const energy = value('energy') ?? Number.NaN;
      const gm: GroupMetrics = {
        energy,
        power: value('power') ?? Number.NaN,
        // perun integrates power samples (also those it derives from counters).
        ...(Number.isNaN(energy) ? {} : { method: 'power-integrated' as const }),
      };
      for (const key of ['util', 'memory', 'readBytes', 'writeBytes'] as const) {
        const v = value(key);
        if (v !== undefined) gm[key] = v;
      }
      if (Object.keys(gm).length > 2 || !Number.isNaN(gm.power)) out[group] = gm;
    }
    return out;
  }

  /** perun's region calls of one RUN: start/stop pairs per rank, paired as events are. */
  regionCalls(run: Group, runtime: number): { calls: RegionCallMetrics[]; events: RegionEvent[] } {
    const regions = this.reader.optionalGroup(run, 'regions');
    if (!regions) return { calls: [], events: [] };
    const events: RegionEvent[] = [];
    for (const region of this.reader.children(regions)) {
      const name = idOf(region);
      const raw = this.reader.optionalGroup(region, 'raw_data');
      for (const rank of raw ? raw.keys() : []) {
        const times = this.reader.numbers(raw!, rank);
        for (let i = 0; i + 1 < times.length; i += 2) {
          const call = `${rank}.${i / 2}`;
          events.push(
            { name, kind: 'start', t: times[i]!, call },
            { name, kind: 'stop', t: times[i + 1]!, call },
          );
        }
      }
    }
    const paired = pairRegionEvents(events, runtime);
    const calls = paired.calls.map((c) => ({
      ...c,
      runtime: c.stop - c.start,
      energy: Number.NaN,
      power: Number.NaN,
      estimatedEnergy: Number.NaN,
      groupEnergy: {},
    }));
    return { calls, events };
  }

  round(run: Group, multiHosts: boolean): { round: RoundReport; host: Group } {
    const hosts = this.reader.children(this.reader.group(run, 'nodes'));
    const host = hosts[0];
    if (!host) throw new JoulegateError(`${run.path}: no host in this perun run`);
    if (hosts.length > 1 && !multiHosts)
      this.notes.push({
        backend: 'perun',
        reason:
          `the run has ${hosts.length} hosts (${hosts.map((h) => idOf(h)).join(', ')}): devices and samples ` +
          `are ${idOf(host)}'s, totals (All) are the run's`,
      });
    const runtime = this.value(run, 'RUNTIME') ?? Number.NaN;
    const power = this.value(run, 'POWER') ?? Number.NaN;
    const metrics: HostMetrics = {
      runtime,
      energy: this.value(host, 'ENERGY') ?? Number.NaN,
      power,
      estimatedEnergy: Number.NaN,
      estimatedPower: Number.NaN,
      facilityEnergy: this.value(run, 'ENERGY') ?? Number.NaN,
      co2: this.value(run, 'CO2') ?? Number.NaN,
      money: this.value(run, 'MONEY') ?? Number.NaN,
      groups: this.groups(host),
    };
    const { calls, events } = this.regionCalls(run, runtime);
    const id = idOf(run);
    return {
      host,
      round: {
        id,
        exit: id === 'failed' ? { status: 1, code: 1, signal: '' } : { status: 0, code: 0, signal: '' },
        overruns: 0,
        times: [],
        values: [],
        events,
        metrics: { host: metrics, regions: calls, problems: [] },
      },
    };
  }

  /** Per region name: perun's Stats (power, utilisation) and the calls' runtimes. */
  regionSummaries(runs: readonly Group[], rounds: readonly RoundReport[]): RegionSummary[] {
    const names = [...new Set(rounds.flatMap((r) => r.metrics.regions.map((c) => c.name)))];
    return names.map((name) => {
      // A region's Stats: under metrics/ (perun 0.9), or beside raw_data in older files.
      const containers = runs.flatMap((run) => {
        const regions = this.reader.optionalGroup(run, 'regions');
        const g = regions && this.reader.children(regions).find((r) => idOf(r) === name);
        return g ? [this.metricsOf(g) ?? g] : [];
      });
      // One round: perun's Stats as they are; several: across the rounds' means.
      const across = (metric: string): Stat =>
        containers.length === 1
          ? this.stats(containers[0], metric)
          : stat(containers.map((g) => this.stats(g, metric).mean));
      const calls = rounds.flatMap((r) => r.metrics.regions.filter((c) => c.name === name));
      return {
        name,
        callsPerRound: calls.length / rounds.length,
        runtime: stat(calls.map((c) => c.runtime)),
        energy: stat([]),
        power: across('POWER'),
        estimatedEnergy: stat([]),
        cpuUtil: across('CPU_UTIL'),
        gpuUtil: across('GPU_UTIL'),
      };
    });
  }
}

/** The unit of a sensor's raw values → what joulegate's series of it is. */
function kindOf(unit: string | undefined, group: DeviceGroup): SeriesKind | undefined {
  if (unit === 'W') return 'power';
  if (unit === 'J') return 'energy';
  if (unit === '%') return 'util';
  if (unit === 'B') return group === 'disk' || group === 'net' ? 'bytes' : 'memory';
  return undefined;
}

/** One run (MULTI_RUN) of a perun HDF5 file as a joulegate report. */
export function readPerunTree(reader: TreeReader, file: Group, runId?: string): Report {
  const tree = new PerunTree(reader);
  const app = reader.firstChild(file);
  const multi = tree.multiRun(app, runId);
  const attrs = attrsOf(multi);
  const config = textAttrsExcept(attrs, PERUN_RUN_ATTRS);
  const runs = reader.children(reader.group(multi, 'nodes'));
  if (runs.length === 0) throw new JoulegateError(`${multi.path}: the perun run has no rounds`);
  const read = runs.map((run, i) => tree.round(run, i > 0));
  const series = tree.series(read[0]!.host);
  const rounds = read.map(({ round, host }) => {
    const hostSeries = tree.series(host);
    const raws = series.map((s) => hostSeries.find((h) => h.spec.id === s.spec.id));
    const first = raws.find((r) => r !== undefined);
    const times = first ? tree.scaled(reader.group(first.sensor, 'raw_data'), 'timesteps') : [];
    const values = raws.map((r) => {
      const v = r ? tree.scaled(reader.group(r.sensor, 'raw_data'), 'values') : [];
      return times.map((_, k) => v[k] ?? Number.NaN);
    });
    return { ...round, times, values };
  });
  const appName = idOf(app);
  const failed = appName.startsWith('failed_') || runs.some((r) => idOf(r) === 'failed');
  const priceUnit = config['post-processing.price_unit'] ?? '€';
  const sources: SourceInfo[] = [];
  for (const [group, gm] of Object.entries(rounds[0]!.metrics.host.groups)) {
    if (gm?.method !== 'power-integrated') continue;
    const ids = series
      .filter((s) => s.spec.group === group && (s.spec.kind === 'power' || s.spec.kind === 'energy'))
      .map((s) => s.spec.id);
    sources.push({
      group: group as DeviceGroup,
      method: 'power-integrated',
      series: ids,
      detail: `imported from perun (${optionalText(attrs, 'perun_version', multi.path) ?? 'version unknown'})`,
    });
  }
  const summaryOf = (metric: string) => tree.stats(tree.metricsOf(multi), metric);
  return {
    kind: 'joulegate-report',
    version: 1,
    app: failed ? appName.replace(/^failed_/, '') : appName,
    runId: idOf(multi),
    failed,
    failure: failed ? 'perun recorded the run as failed' : '',
    created: isoOf(optionalText(attrs, 'execution_dt', multi.path)),
    host: idOf(read[0]!.host),
    metadata: textAttrsExcept(attrsOf(runs[0]!), []),
    config,
    samplingPeriod: Number(config['monitor.sampling_period'] ?? Number.NaN),
    priceUnit,
    units: reportUnits(priceUnit),
    series: series.map((s) => s.spec),
    sources,
    // Each round's host lists the same sensors: one note each.
    unavailable: [...new Map(tree.notes.map((d) => [`${d.signal} ${d.reason}`, d])).values()],
    warmupRounds: Number(config['benchmarking.warmup_rounds'] ?? 0) || 0,
    rounds,
    summary: {
      runtime: summaryOf('RUNTIME'),
      energy: summaryOf('ENERGY'),
      power: summaryOf('POWER'),
      estimated_energy: stat([]),
      co2: summaryOf('CO2'),
      money: summaryOf('MONEY'),
    },
    regions: tree.regionSummaries(runs, rounds),
  };
}
