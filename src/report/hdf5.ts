import type { AttributionReport } from '../attribution/summary.js';
import type {
  GroupMetrics,
  RegionCallMetrics,
  RegionEvent,
  Report,
  RoundReport,
  SourceInfo,
  Stat,
} from '../monitor/model/report-model.js';
import { stat } from '../monitor/model/round-stats.js';
import { seriesUnit } from '../monitor/model/units.js';
import type { Diagnostic } from '../platform/backend.js';
import type { DeviceGroup, SeriesSpec } from '../platform/signal-catalogue.js';
import { float64, type H5Group, type H5Node, int64, rootGroup } from './hdf5-file/tree.js';
import { writeHdf5To } from './hdf5-file/write-file.js';
import {
  type Aggregate,
  DEVICE_TYPE,
  GROUP_ENERGY_COLUMN,
  GROUP_VALUE_KEYS,
  groupValuePlace,
  HOST_TOTAL_ATTRS,
  MULTI_RUN_ATTRS,
  metricGroupName,
  NODE_TYPE,
  naiveLocalTime,
  nodeName,
  ONE_VALUE_ATTR,
  PERUN_METRICS,
  type PerunUnit,
  RUN_ATTRS,
  SENSOR_ATTRS,
  SOURCE_ATTRS,
  TABLES,
} from './hdf5-layout.js';

function intAttribute(target: H5Node, name: string, value: number): void {
  target.setAttr(name, int64(value));
}

/** A float64 attribute, whole numbers too (perun reads every metric value as a float). */
function floatAttribute(target: H5Node, name: string, value: number): void {
  target.setAttr(name, float64(value));
}

/** perun's MetricMetaData attributes: every value here is a float64 in SI units (mag 1). */
function describeValues(target: H5Node, unit: PerunUnit, validMin = Number.NEGATIVE_INFINITY): void {
  target.setAttr('unit', unit);
  floatAttribute(target, 'mag', 1.0);
  target.setAttr('dtype', 'float64');
  floatAttribute(target, 'valid_min', validMin);
  floatAttribute(target, 'valid_max', Number.POSITIVE_INFINITY);
  floatAttribute(target, 'fill', Number.NaN);
}

/** A group that lists its members and attributes in creation order (the report's order). */
const orderedGroup = (parent: H5Group, name: string) => parent.group(name, true);

function nodeGroup(parent: H5Group, id: string, type: number, attrs: Record<string, string> = {}): H5Group {
  const g = orderedGroup(parent, nodeName(id));
  intAttribute(g, 'type', type);
  if (nodeName(id) !== id) g.setAttr('id', id);
  for (const [k, v] of Object.entries(attrs)) g.setAttr(k, v);
  orderedGroup(g, 'metrics');
  orderedGroup(g, 'nodes');
  return g;
}

/** One metric group, named and typed as perun's reader expects; a Stat becomes perun's Stats. */
function addMetric(
  parent: H5Group,
  metric: string,
  unit: PerunUnit,
  value: number | Stat,
  agg: Aggregate = 'sum',
): void {
  if (!PERUN_METRICS.has(metric)) throw new Error(`not a perun metric: ${metric}`);
  // Nothing measured (or only estimated: see ESTIMATED_ATTRS) is no metric, never a NaN one.
  if (Number.isNaN(typeof value === 'number' ? value : value.mean)) return;
  const m = orderedGroup(parent, metricGroupName(metric));
  describeValues(m, unit);
  m.setAttr('type', metric);
  if (typeof value === 'number') {
    m.setAttr('agg_type', agg);
    floatAttribute(m, 'value', value);
  } else {
    for (const k of ['sum', 'mean', 'min', 'max'] as const) floatAttribute(m, k, value[k]);
    // One value has no spread (NaN in the report); perun's files say 0.0 (ONE_VALUE_ATTR).
    const oneValue = Number.isNaN(value.std);
    floatAttribute(m, 'std', oneValue ? 0 : value.std);
    if (oneValue) intAttribute(m, ONE_VALUE_ATTR, 1);
  }
}

const metricsOf = (node: H5Group) => node.get('metrics') as H5Group;
const nodesOf = (node: H5Group) => node.get('nodes') as H5Group;

/** Equal-length datasets under `name` (one entry per row); nothing when there are no rows. */
function writeTable(
  parent: H5Group,
  name: string,
  columns: Record<string, Float64Array | Int32Array | string[]>,
) {
  const first = Object.values(columns)[0];
  if (!first || first.length === 0) return;
  const table = orderedGroup(parent, name);
  for (const [column, data] of Object.entries(columns)) table.dataset(column, data);
}

/**
 * A device group's metrics: perun's metric where perun has one, an attribute otherwise.
 * Estimates never appear as perun metrics (a reader would take them for measurements).
 * Unmeasured energy and power (NaN) and absent values are left out.
 */
function addGroupMetrics(node: H5Group, group: DeviceGroup, gm: GroupMetrics): void {
  if (gm.method) node.setAttr(SOURCE_ATTRS.method, gm.method);
  if (gm.coverage !== undefined) floatAttribute(node, SOURCE_ATTRS.coverage, gm.coverage);
  for (const key of GROUP_VALUE_KEYS) {
    const value = gm[key];
    if (value === undefined || ((key === 'energy' || key === 'power') && Number.isNaN(value))) continue;
    const place = groupValuePlace(group, key, gm.method);
    // A series that gave no value (NaN) is no perun metric: its attribute keeps the NaN.
    if (place.metric && !Number.isNaN(value))
      addMetric(metricsOf(node), place.metric, place.unit, value, place.agg);
    else floatAttribute(node, place.attribute, value);
  }
}

/** Only the perun metrics of a device group's values (addGroupMetrics writes the rest). */
function addPerunGroupMetrics(metrics: H5Group, group: DeviceGroup, gm: GroupMetrics): void {
  for (const key of GROUP_VALUE_KEYS) {
    const value = gm[key];
    const place = groupValuePlace(group, key, gm.method);
    if (value !== undefined && place.metric) addMetric(metrics, place.metric, place.unit, value, place.agg);
  }
}

function addSource(node: H5Group, source: SourceInfo): void {
  node.setAttr(SOURCE_ATTRS.series, source.series);
  node.setAttr(SOURCE_ATTRS.detail, source.detail);
  if (source.wattsPerUnit !== undefined) floatAttribute(node, SOURCE_ATTRS.wattsPerUnit, source.wattsPerUnit);
}

function addSensor(
  parent: H5Group,
  s: SeriesSpec,
  position: number,
  times: number[],
  values: number[],
): void {
  const sensor = nodeGroup(parent, s.id, NODE_TYPE.SENSOR, {
    device_type: DEVICE_TYPE[s.group],
    [SENSOR_ATTRS.signal]: s.signal,
    [SENSOR_ATTRS.backend]: s.backend,
    [SENSOR_ATTRS.kind]: s.kind,
    [SENSOR_ATTRS.domain]: s.domain,
  });
  intAttribute(sensor, SENSOR_ATTRS.index, s.index);
  if (s.direction) sensor.setAttr(SENSOR_ATTRS.direction, s.direction);
  if (s.outsidePlatform) intAttribute(sensor, SENSOR_ATTRS.outsidePlatform, 1);
  intAttribute(sensor, SENSOR_ATTRS.position, position);
  const raw = orderedGroup(sensor, 'raw_data');
  describeValues(raw.dataset('timesteps', Float64Array.from(times)), 's');
  describeValues(raw.dataset('values', Float64Array.from(values)), seriesUnit(s.kind) as PerunUnit);
}

/**
 * perun's region groups on a RUN, as its importer reads them: per region name, Stats over its
 * calls in that round under `metrics/` (RUNTIME, POWER, ENERGY, CPU_UTIL, GPU_UTIL; one not
 * measured in any call is left out), the calls per rank as `N_RUNS` beside `metrics/`, and the
 * call start/stop times of rank 0 as `raw_data/0`, alternating, in seconds since the round began.
 * What perun has no place for goes to the `region_calls` table.
 */
function addRegions(run: H5Group, calls: readonly RegionCallMetrics[]): void {
  if (calls.length === 0) return;
  const regions = orderedGroup(run, 'regions');
  for (const name of [...new Set(calls.map((c) => c.name))]) {
    const mine = calls.filter((c) => c.name === name);
    const g = orderedGroup(regions, nodeName(name));
    g.setAttr('id', name);
    intAttribute(g, 'processed', 1);
    intAttribute(g, 'world_size', 1);
    const metrics = orderedGroup(g, 'metrics');
    addMetric(metrics, 'runtime', 's', stat(mine.map((c) => c.runtime)));
    addMetric(metrics, 'power', 'W', stat(mine.map((c) => c.power)));
    addMetric(metrics, 'energy', 'J', stat(mine.map((c) => c.energy)));
    addMetric(metrics, 'cpu_util', '%', stat(mine.map((c) => c.cpuUtil ?? Number.NaN)));
    addMetric(metrics, 'gpu_util', '%', stat(mine.map((c) => c.gpuUtil ?? Number.NaN)));
    addMetric(g, 'n_runs', '', stat([mine.length]));
    const times = mine.flatMap((c) => [c.start, c.stop]);
    orderedGroup(g, 'raw_data').dataset('0', Float64Array.from(times));
  }
}

/** What perun's region groups have no place for: per call, in call order (see TABLES.calls). */
function addRegionCalls(run: H5Group, calls: readonly RegionCallMetrics[]): void {
  if (calls.length === 0) return;
  const column = (of: (c: RegionCallMetrics) => number | undefined) =>
    Float64Array.from(calls, (c) => of(c) ?? Number.NaN);
  // Utilisation is absent from reports written before it was measured: so is its column.
  const utilisation: Record<string, Float64Array> = {};
  for (const [name, of] of [
    ['cpu_util', (c: RegionCallMetrics) => c.cpuUtil],
    ['gpu_util', (c: RegionCallMetrics) => c.gpuUtil],
  ] as const) {
    if (calls.some((c) => of(c) !== undefined)) utilisation[name] = column(of);
  }
  const groups = Object.keys(calls[0]!.groupEnergy) as DeviceGroup[];
  writeTable(run, TABLES.calls, {
    name: calls.map((c) => c.name),
    depth: Int32Array.from(calls, (c) => c.depth),
    open: Int32Array.from(calls, (c) => (c.open ? 1 : 0)),
    energy: column((c) => c.energy),
    power: column((c) => c.power),
    estimated_energy: column((c) => c.estimatedEnergy),
    ...utilisation,
    ...Object.fromEntries(groups.map((g) => [`${GROUP_ENERGY_COLUMN}${g}`, column((c) => c.groupEnergy[g])])),
  });
}

function addEvents(run: H5Group, events: readonly RegionEvent[]): void {
  writeTable(run, TABLES.events, {
    name: events.map((e) => e.name),
    kind: events.map((e) => e.kind),
    t: Float64Array.from(events, (e) => e.t),
    // Call ids ('' for none) only when a client sent them: older files have no such column.
    ...(events.some((e) => e.call !== undefined) ? { call: events.map((e) => e.call ?? '') } : {}),
  });
}

function addDiagnostics(multi: H5Group, unavailable: readonly Diagnostic[]): void {
  writeTable(multi, TABLES.unavailable, {
    backend: unavailable.map((d) => d.backend),
    signal: unavailable.map((d) => d.signal ?? ''),
    reason: unavailable.map((d) => d.reason),
  });
}

/** The attribution section as tables (TABLES.attribution); hdf5-read.ts rebuilds it. */
function addAttribution(multi: H5Group, a: AttributionReport): void {
  const g = orderedGroup(multi, TABLES.attribution);
  g.setAttr('idle_share', a.idleShare);
  g.setAttr('app', a.appIs);
  const column = (pick: (x: AttributionReport['groups'][number]) => number) =>
    Float64Array.from(a.groups, pick);
  writeTable(g, 'groups', {
    group: a.groups.map((x) => x.group),
    method: a.groups.map((x) => x.method),
    measured: column((x) => x.measured),
    app: column((x) => x.app),
    others: column((x) => x.others),
    unattributed: column((x) => x.unattributed),
    idle: column((x) => x.idle),
    missing_intervals: column((x) => x.missingIntervals),
    missing_seconds: column((x) => x.missingSeconds),
  });
  writeTable(g, 'consumers', { id: [...a.consumerIds] });
  const cells = a.groups.flatMap((x) =>
    x.consumers.map((energy, consumer) => ({ consumer, group: x.group, energy })),
  );
  writeTable(g, 'consumer_energy', {
    consumer: Int32Array.from(cells, (c) => c.consumer),
    group: cells.map((c) => c.group),
    energy: Float64Array.from(cells, (c) => c.energy),
  });
  writeTable(g, 'notes', { text: [...a.notes] });
}

/** One RUN: its host NODE, device groups and sensors, regions, events and problems. */
function addRound(multi: H5Group, report: Report, round: RoundReport): void {
  const run = nodeGroup(nodesOf(multi), round.id, NODE_TYPE.RUN, report.metadata);
  intAttribute(run, RUN_ATTRS.exitStatus, round.exit.status);
  intAttribute(run, RUN_ATTRS.exitCode, round.exit.code);
  run.setAttr(RUN_ATTRS.exitSignal, round.exit.signal);
  intAttribute(run, RUN_ATTRS.overruns, round.overruns);
  const h = round.metrics.host;
  addMetric(metricsOf(run), 'runtime', 's', h.runtime, 'max');
  addMetric(metricsOf(run), 'energy', 'J', h.facilityEnergy);
  addMetric(metricsOf(run), 'power', 'W', h.power);
  addMetric(metricsOf(run), 'co2', 'g', h.co2);
  addMetric(metricsOf(run), 'money', '', h.money);
  if (!Number.isNaN(h.estimatedEnergy)) {
    floatAttribute(run, RUN_ATTRS.estimatedEnergy, h.estimatedEnergy);
    floatAttribute(run, RUN_ATTRS.estimatedPower, h.estimatedPower);
  }
  if (h.total) {
    run.setAttr(HOST_TOTAL_ATTRS.rule, h.total.rule);
    floatAttribute(run, HOST_TOTAL_ATTRS.boardEnergy, h.total.boardEnergy);
    run.setAttr(HOST_TOTAL_ATTRS.coveredGroups, h.total.coveredGroups.join(','));
    floatAttribute(run, HOST_TOTAL_ATTRS.coveredEnergy, h.total.coveredEnergy);
    run.setAttr(HOST_TOTAL_ATTRS.outsideGroups, h.total.outsideGroups.join(','));
    floatAttribute(run, HOST_TOTAL_ATTRS.outsideEnergy, h.total.outsideEnergy);
  }
  addRegions(run, round.metrics.regions);
  addRegionCalls(run, round.metrics.regions);
  addEvents(run, round.events);
  writeTable(run, TABLES.problems, { text: round.metrics.problems });
  const host = nodeGroup(nodesOf(run), report.host, NODE_TYPE.NODE);
  addMetric(metricsOf(host), 'runtime', 's', h.runtime, 'max');
  addMetric(metricsOf(host), 'energy', 'J', h.energy);
  addMetric(metricsOf(host), 'power', 'W', h.power);
  // perun's RUN and NODE carry their devices' metrics too (CPU_UTIL, DRAM_MEM, CPU_POWER, …):
  // one host, one group per metric name, so the values are the groups' own.
  for (const target of [run, host])
    for (const [name, gm] of Object.entries(h.groups))
      addPerunGroupMetrics(metricsOf(target), name as DeviceGroup, gm!);
  for (const [name, gm] of Object.entries(h.groups)) {
    const group = name as DeviceGroup;
    const dg = nodeGroup(nodesOf(host), group, NODE_TYPE.DEVICE_GROUP, { device_type: DEVICE_TYPE[group] });
    addGroupMetrics(dg, group, gm!);
    const source = report.sources.find((s) => s.group === group);
    if (source) addSource(dg, source);
    report.series.forEach((s, i) => {
      if (s.group === group) addSensor(nodesOf(dg), s, i, round.times, round.values[i]!);
    });
  }
}

/**
 * Writes perun's HDF5 layout: APP → MULTI_RUN → RUN (one per round) → NODE → DEVICE_GROUP →
 * SENSOR, each a group named by its id with `type`, metadata attributes, `metrics/<NAME>` and
 * `nodes/`; sensors hold `raw_data/{timesteps,values}`, RUNs `regions/`. Names, enums and
 * attributes are the ones perun's importer accepts (test/fixtures/perun_hdf5_check.py checks
 * them with h5py). The rest of the report is in attributes and tables perun ignores (see
 * hdf5-layout.ts), so hdf5-read.ts rebuilds the whole report from the tree. The file is open as
 * `fd` (a temp file the caller moves into place once it is complete).
 */
export function writeHdf5(report: Report, fd: number): void {
  writeHdf5To(fd, reportTree(report));
}

/** The report as an HDF5 tree (exported for the writer test: the same tree through h5wasm). */
export function reportTree(report: Report): H5Group {
  return reportsTree([report]);
}

/**
 * The runs of one app as one HDF5 tree, as perun keeps them: one APP whose MULTI_RUNs are the
 * reports, oldest first (an accumulating `<app>.hdf5`, `hdf5_file = app`). The APP's Stats are
 * over every round of every run, as perun's; one report's are its own summary.
 */
export function reportsTree(reports: readonly Report[]): H5Group {
  const file = rootGroup();
  const first = reports[0]!;
  const last = reports.at(-1)!;
  const app = nodeGroup(file, first.app, NODE_TYPE.APP, {
    creation_dt: naiveLocalTime(first.created),
    last_execution_dt: naiveLocalTime(last.created),
  });
  const hosts = reports.flatMap((r) => r.rounds.map((round) => round.metrics.host));
  const summary =
    reports.length === 1
      ? first.summary
      : {
          runtime: stat(hosts.map((h) => h.runtime)),
          energy: stat(hosts.map((h) => h.facilityEnergy)),
          power: stat(hosts.map((h) => h.power)),
          co2: stat(hosts.map((h) => h.co2)),
          money: stat(hosts.map((h) => h.money)),
        };
  addSummary(app, summary);
  for (const report of reports) addMultiRun(app, report);
  return file;
}

/** perun's Stats of a node over its rounds (its summary sentence reads ENERGY, CO2 and MONEY). */
function addSummary(node: H5Group, summary: Report['summary']) {
  addMetric(metricsOf(node), 'runtime', 's', summary.runtime!);
  addMetric(metricsOf(node), 'energy', 'J', summary.energy!);
  addMetric(metricsOf(node), 'power', 'W', summary.power!);
  addMetric(metricsOf(node), 'co2', 'g', summary.co2!);
  // perun's Unit has no currency: the unit is the MULTI_RUN's price_unit attribute.
  addMetric(metricsOf(node), 'money', '', summary.money!);
}

function addMultiRun(app: H5Group, report: Report): void {
  const started = naiveLocalTime(report.created);
  const multi = nodeGroup(nodesOf(app), report.runId, NODE_TYPE.MULTI_RUN, {
    [MULTI_RUN_ATTRS.appName]: report.app,
    [MULTI_RUN_ATTRS.created]: started,
    [MULTI_RUN_ATTRS.createdExact]: report.created,
    [MULTI_RUN_ATTRS.rounds]: String(report.rounds.length),
    [MULTI_RUN_ATTRS.failed]: String(report.failed),
    [MULTI_RUN_ATTRS.priceUnit]: report.priceUnit,
    [MULTI_RUN_ATTRS.failure]: report.failure,
    ...report.config,
  });
  floatAttribute(multi, MULTI_RUN_ATTRS.samplingPeriod, report.samplingPeriod);
  intAttribute(multi, MULTI_RUN_ATTRS.warmupRounds, report.warmupRounds);
  if (report.omittedRounds) intAttribute(multi, MULTI_RUN_ATTRS.omittedRounds, report.omittedRounds);
  addDiagnostics(multi, report.unavailable);
  addSummary(multi, report.summary);
  if (report.attribution) addAttribution(multi, report.attribution);
  for (const round of report.rounds) addRound(multi, report, round);
}
