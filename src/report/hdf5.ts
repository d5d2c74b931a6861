import type { GroupMetrics, Stat } from '../monitor/metrics.js';
import { seriesUnit } from '../monitor/signals.js';
import { errorMessage, ParseError } from '../platform/errors.js';
import { reportFromJson, reportToJson } from './json.js';
import type { Report } from './model.js';

type H5 = typeof import('h5wasm/node');
type Group = InstanceType<H5['Group']>;

/** perun's NodeType values, stored as the `type` attribute of each node group. */
const NODE_TYPE = { APP: 1, MULTI_RUN: 2, RUN: 3, NODE: 4, DEVICE_GROUP: 5, SENSOR: 6 } as const;
/** Attribute on the MULTI_RUN group holding the whole report, so `export` restores it exactly. */
const REPORT_ATTR = 'joulegate_report';

/** h5wasm is loaded only when HDF5 is read or written (it is a large WebAssembly module). */
async function loadH5(): Promise<H5> {
  const h5 = await import('h5wasm/node');
  await h5.ready;
  return h5;
}

function nodeGroup(parent: Group, id: string, type: number, attrs: Record<string, string> = {}): Group {
  // '/' would nest groups in HDF5: ids keep their text otherwise.
  const g = parent.create_group(id.replace(/\//g, '_'));
  g.create_attribute('type', type);
  for (const [k, v] of Object.entries(attrs)) g.create_attribute(k, v);
  g.create_group('metrics');
  g.create_group('nodes');
  return g;
}

function addMetric(node: Group, name: string, unit: string, agg: string, value: number | Stat): void {
  const m = (node.get('metrics') as Group).create_group(name);
  m.create_attribute('type', name);
  m.create_attribute('unit', unit);
  m.create_attribute('mag', 1.0);
  m.create_attribute('dtype', 'float64');
  m.create_attribute('fill', Number.NaN);
  m.create_attribute('valid_min', Number.NEGATIVE_INFINITY);
  m.create_attribute('valid_max', Number.POSITIVE_INFINITY);
  if (typeof value === 'number') {
    m.create_attribute('agg_type', agg);
    m.create_attribute('value', value);
  } else {
    for (const k of ['sum', 'mean', 'std', 'min', 'max'] as const) m.create_attribute(k, value[k]);
  }
}

function addGroupMetrics(node: Group, group: string, gm: GroupMetrics): void {
  const prefix = group === 'ram' ? 'dram' : group;
  if (Number.isFinite(gm.energy)) addMetric(node, `${prefix}_energy`, 'J', 'sum', gm.energy);
  if (Number.isFinite(gm.power)) addMetric(node, `${prefix}_power`, 'W', 'sum', gm.power);
  if (gm.util !== undefined) addMetric(node, `${prefix}_util`, '%', 'mean', gm.util);
  if (gm.memory !== undefined) addMetric(node, `${prefix}_mem`, 'B', 'sum', gm.memory);
  if (gm.readBytes !== undefined) addMetric(node, `${group}_read`, 'B', 'sum', gm.readBytes);
  if (gm.writeBytes !== undefined) addMetric(node, `${group}_write`, 'B', 'sum', gm.writeBytes);
}

/**
 * Writes perun's HDF5 layout: APP → MULTI_RUN → RUN (one per round) → NODE → DEVICE_GROUP →
 * SENSOR, each a group named by its id with `type`, metadata attributes, `metrics/<name>` and
 * `nodes/`; sensors hold `raw_data/{timesteps,values}`. The file is created by the caller
 * (O_EXCL) and overwritten here.
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
      ...report.config,
    });
    multi.create_attribute(REPORT_ATTR, reportToJson(report));
    for (const [name, s] of Object.entries(report.summary))
      if (Number.isFinite(s.mean)) addMetric(multi, name, '', 'stats', s);
    for (const round of report.rounds) {
      const run = nodeGroup(multi.get('nodes') as Group, round.id, NODE_TYPE.RUN, report.metadata);
      const h = round.metrics.host;
      addMetric(run, 'runtime', 's', 'max', h.runtime);
      addMetric(run, 'energy', 'J', 'sum', h.facilityEnergy);
      addMetric(run, 'power', 'W', 'sum', h.power);
      addMetric(run, 'co2', 'g', 'sum', h.co2);
      addMetric(run, 'money', report.priceUnit, 'sum', h.money);
      const host = nodeGroup(run.get('nodes') as Group, report.host, NODE_TYPE.NODE);
      addMetric(host, 'runtime', 's', 'max', h.runtime);
      addMetric(host, 'energy', 'J', 'sum', h.energy);
      for (const [group, gm] of Object.entries(h.groups)) {
        const dg = nodeGroup(host.get('nodes') as Group, group, NODE_TYPE.DEVICE_GROUP, {
          device_type: group,
        });
        addGroupMetrics(dg, group, gm!);
        report.series.forEach((s, i) => {
          if (s.group !== group) return;
          const sensor = nodeGroup(dg.get('nodes') as Group, s.id, NODE_TYPE.SENSOR, {
            device_type: group,
            signal: s.signal,
            backend: s.backend,
            kind: s.kind,
          });
          const raw = sensor.create_group('raw_data');
          raw
            .create_dataset({ name: 'timesteps', data: Float64Array.from(round.times) })
            .create_attribute('unit', 's');
          raw
            .create_dataset({ name: 'values', data: Float64Array.from(round.values[i]!) })
            .create_attribute('unit', seriesUnit(s.kind));
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
