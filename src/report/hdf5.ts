import { type GroupMetrics, type RegionCallMetrics, type Stat, stat } from '../monitor/metrics.js';
import type { Report } from '../monitor/report-model.js';
import { type DeviceGroup, seriesUnit } from '../monitor/signals.js';
import { importModule } from '../platform/dynamic-import.js';
import { errorMessage, ParseError } from '../platform/errors.js';
import { reportFromJson, reportToJson } from './json.js';

type H5 = typeof import('h5wasm/node');
type Group = InstanceType<H5['Group']>;

/** perun's NodeType values, stored as the `type` attribute of each node group. */
const NODE_TYPE = { APP: 1, MULTI_RUN: 2, RUN: 3, NODE: 4, DEVICE_GROUP: 5, SENSOR: 6 } as const;
/** Attribute on the MULTI_RUN group holding the whole report, so `export` restores it exactly. */
const REPORT_ATTR = 'joulegate_report';

/**
 * perun's MetricType values. perun's reader rebuilds each metric with MetricType(type) and
 * names its group after the enum member, so only these may appear under `metrics/`.
 */
const PERUN_METRICS = new Set([
  'runtime',
  'power',
  'cpu_power',
  'gpu_power',
  'dram_power',
  'other_power',
  'cpu_util',
  'gpu_util',
  'other_util',
  'dram_mem',
  'gpu_mem',
  'net_read',
  'net_write',
  'disk_read',
  'disk_write',
  'energy',
  'cpu_energy',
  'gpu_energy',
  'dram_energy',
  'other_energy',
  'other_memory',
  'cpu_clock',
  'gpu_clock',
  'n_runs',
  'money',
  'co2',
]);
/** perun's Unit values (its reader rejects any other unit string). */
type PerunUnit = 'J' | 'W' | 'B' | 's' | '%' | '' | 'g' | 'Hz';
type Aggregate = 'sum' | 'mean' | 'max' | 'min';

/** perun's DeviceType of each device group (it has no "board": that is OTHER). */
const DEVICE_TYPE: Record<DeviceGroup, string> = {
  cpu: 'cpu',
  gpu: 'gpu',
  ram: 'ram',
  disk: 'disk',
  net: 'net',
  board: 'other',
};
/** The prefix of a group's metrics in perun's names (RAM is DRAM_*, the board OTHER_*). */
const METRIC_PREFIX: Record<DeviceGroup, string> = {
  cpu: 'cpu',
  gpu: 'gpu',
  ram: 'dram',
  disk: 'disk',
  net: 'net',
  board: 'other',
};

/** h5wasm is loaded only when HDF5 is read or written (it is a large WebAssembly module). */
async function loadH5(): Promise<H5> {
  const h5 = await importModule<H5>('h5wasm/node');
  await h5.ready;
  return h5;
}

type Node = Group | InstanceType<H5['Dataset']>;

function intAttribute(target: Node, name: string, value: number): void {
  target.create_attribute(name, BigInt64Array.of(BigInt(value)), [], '<q');
}

/** perun's MetricMetaData attributes: every value here is a float64 in SI units (mag 1). */
function describeValues(target: Node, unit: PerunUnit, validMin = Number.NEGATIVE_INFINITY): void {
  target.create_attribute('unit', unit);
  target.create_attribute('mag', 1.0);
  target.create_attribute('dtype', 'float64');
  target.create_attribute('valid_min', validMin);
  target.create_attribute('valid_max', Number.POSITIVE_INFINITY);
  target.create_attribute('fill', Number.NaN);
}

function nodeGroup(parent: Group, id: string, type: number, attrs: Record<string, string> = {}): Group {
  // '/' would nest groups in HDF5: ids keep their text otherwise.
  const g = parent.create_group(id.replace(/\//g, '_'));
  intAttribute(g, 'type', type);
  for (const [k, v] of Object.entries(attrs)) g.create_attribute(k, v);
  g.create_group('metrics');
  g.create_group('nodes');
  return g;
}

/** One metric group, named and typed as perun's reader expects; a Stat becomes perun's Stats. */
function addMetric(
  parent: Group,
  metric: string,
  unit: PerunUnit,
  value: number | Stat,
  agg: Aggregate = 'sum',
): void {
  if (!PERUN_METRICS.has(metric)) throw new Error(`not a perun metric: ${metric}`);
  const name = metric === 'other_memory' ? 'OTHER_MEM' : metric.toUpperCase();
  const m = parent.create_group(name);
  describeValues(m, unit);
  m.create_attribute('type', metric);
  if (typeof value === 'number') {
    m.create_attribute('agg_type', agg);
    m.create_attribute('value', value);
  } else {
    for (const k of ['sum', 'mean', 'min', 'max', 'std'] as const) m.create_attribute(k, value[k]);
  }
}

const metricsOf = (node: Group) => node.get('metrics') as Group;

/**
 * A device group's metrics under perun's names. Estimates never appear as perun metrics (a
 * reader would take them for measurements): they are attributes saying what they are.
 */
function addGroupMetrics(node: Group, group: DeviceGroup, gm: GroupMetrics): void {
  const metrics = metricsOf(node);
  const prefix = METRIC_PREFIX[group];
  const add = (name: string, unit: PerunUnit, value: number | undefined, agg: Aggregate) => {
    if (value !== undefined && PERUN_METRICS.has(name)) addMetric(metrics, name, unit, value, agg);
  };
  if (gm.method) node.create_attribute('energy_method', gm.method);
  if (gm.method === 'estimated') {
    node.create_attribute('estimated_energy_J', gm.energy);
    node.create_attribute('estimated_power_W', gm.power);
  } else {
    if (Number.isFinite(gm.energy)) add(`${prefix}_energy`, 'J', gm.energy, 'sum');
    if (Number.isFinite(gm.power)) add(`${prefix}_power`, 'W', gm.power, 'sum');
  }
  add(`${prefix}_util`, '%', gm.util, 'mean');
  add(group === 'board' ? 'other_memory' : `${prefix}_mem`, 'B', gm.memory, 'sum');
  add(`${group}_read`, 'B', gm.readBytes, 'sum');
  add(`${group}_write`, 'B', gm.writeBytes, 'sum');
}

/**
 * perun's region groups on a RUN: per region name, Stats over its calls in that round (perun
 * requires CPU_UTIL, GPU_UTIL, POWER, RUNTIME, N_RUNS, NaN where not sampled; joulegate adds
 * ENERGY) and the call
 * start/stop times of rank 0 as `raw_data/0`, alternating, in seconds since the round began.
 */
function addRegions(run: Group, calls: readonly RegionCallMetrics[]): void {
  if (calls.length === 0) return;
  const regions = run.create_group('regions');
  for (const name of [...new Set(calls.map((c) => c.name))]) {
    const mine = calls.filter((c) => c.name === name);
    const g = regions.create_group(name.replace(/\//g, '_'));
    g.create_attribute('id', name);
    intAttribute(g, 'processed', 1);
    intAttribute(g, 'world_size', 1);
    addMetric(g, 'runtime', 's', stat(mine.map((c) => c.runtime)));
    addMetric(g, 'power', 'W', stat(mine.map((c) => c.power)));
    addMetric(g, 'energy', 'J', stat(mine.map((c) => c.energy)));
    addMetric(g, 'cpu_util', '%', stat(mine.map((c) => c.cpuUtil ?? Number.NaN)));
    addMetric(g, 'gpu_util', '%', stat(mine.map((c) => c.gpuUtil ?? Number.NaN)));
    addMetric(g, 'n_runs', '', stat([mine.length]));
    const times = mine.flatMap((c) => [c.start, c.stop]);
    g.create_group('raw_data').create_dataset({ name: '0', data: Float64Array.from(times) });
  }
}

/**
 * Writes perun's HDF5 layout: APP → MULTI_RUN → RUN (one per round) → NODE → DEVICE_GROUP →
 * SENSOR, each a group named by its id with `type`, metadata attributes, `metrics/<NAME>` and
 * `nodes/`; sensors hold `raw_data/{timesteps,values}`, RUNs `regions/`. Names, enums and
 * attributes are the ones perun's importer accepts (test/fixtures/perun_hdf5_check.py checks
 * them with h5py). The file is created by the caller (O_EXCL) and overwritten here.
 */
export async function writeHdf5(report: Report, path: string): Promise<void> {
  const h5 = await loadH5();
  const file = new h5.File(path, 'w');
  try {
    const app = nodeGroup(file, report.app, NODE_TYPE.APP, {
      creation_dt: report.created,
      last_execution_dt: report.created,
    });
    const multi = nodeGroup(app.get('nodes') as Group, report.runId, NODE_TYPE.MULTI_RUN, {
      app_name: report.app,
      execution_dt: report.created,
      n_runs: String(report.rounds.length),
      failed: String(report.failed),
      price_unit: report.priceUnit,
      ...report.config,
    });
    multi.create_attribute(REPORT_ATTR, reportToJson(report));
    const { summary } = report;
    addMetric(metricsOf(multi), 'runtime', 's', summary.runtime!);
    addMetric(metricsOf(multi), 'energy', 'J', summary.energy!);
    addMetric(metricsOf(multi), 'power', 'W', summary.power!);
    addMetric(metricsOf(multi), 'co2', 'g', summary.co2!);
    // perun's Unit has no currency: the unit is the MULTI_RUN's price_unit attribute.
    addMetric(metricsOf(multi), 'money', '', summary.money!);
    for (const round of report.rounds) {
      const run = nodeGroup(multi.get('nodes') as Group, round.id, NODE_TYPE.RUN, report.metadata);
      const h = round.metrics.host;
      addMetric(metricsOf(run), 'runtime', 's', h.runtime, 'max');
      addMetric(metricsOf(run), 'energy', 'J', h.facilityEnergy);
      addMetric(metricsOf(run), 'power', 'W', h.power);
      addMetric(metricsOf(run), 'co2', 'g', h.co2);
      addMetric(metricsOf(run), 'money', '', h.money);
      if (Number.isFinite(h.estimatedEnergy)) {
        run.create_attribute('estimated_energy_J', h.estimatedEnergy);
        run.create_attribute('estimated_power_W', h.estimatedPower);
      }
      addRegions(run, round.metrics.regions);
      const host = nodeGroup(run.get('nodes') as Group, report.host, NODE_TYPE.NODE);
      addMetric(metricsOf(host), 'runtime', 's', h.runtime, 'max');
      addMetric(metricsOf(host), 'energy', 'J', h.energy);
      for (const [name, gm] of Object.entries(h.groups)) {
        const group = name as DeviceGroup;
        const dg = nodeGroup(host.get('nodes') as Group, group, NODE_TYPE.DEVICE_GROUP, {
          device_type: DEVICE_TYPE[group],
        });
        addGroupMetrics(dg, group, gm!);
        report.series.forEach((s, i) => {
          if (s.group !== group) return;
          const sensor = nodeGroup(dg.get('nodes') as Group, s.id, NODE_TYPE.SENSOR, {
            device_type: DEVICE_TYPE[group],
            signal: s.signal,
            backend: s.backend,
            kind: s.kind,
          });
          const raw = sensor.create_group('raw_data');
          const t = raw.create_dataset({ name: 'timesteps', data: Float64Array.from(round.times) });
          describeValues(t, 's');
          const v = raw.create_dataset({ name: 'values', data: Float64Array.from(round.values[i]!) });
          describeValues(v, seriesUnit(s.kind) as PerunUnit);
        });
      }
    }
  } finally {
    file.close();
  }
}

/** Reads a report written by writeHdf5 (the first MULTI_RUN of the first APP). */
export async function readHdf5(path: string): Promise<Report> {
  const h5 = await loadH5();
  let file: InstanceType<H5['File']>;
  try {
    file = new h5.File(path, 'r');
  } catch (err) {
    throw new ParseError(`${path}: not a readable HDF5 file (${errorMessage(err)})`);
  }
  try {
    const appName = file.keys()[0];
    const nodes = appName ? (file.get(`${appName}/nodes`) as Group | null) : null;
    const runId = nodes?.keys()[0];
    const multi = runId ? (nodes!.get(runId) as Group | null) : null;
    const attr = multi?.attrs[REPORT_ATTR]?.value;
    if (typeof attr !== 'string') throw new ParseError(`${path}: no joulegate report in this HDF5 file`);
    return reportFromJson(attr, path);
  } finally {
    file.close();
  }
}
