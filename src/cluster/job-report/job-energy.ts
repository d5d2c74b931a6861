import { type EnergyPart, hostTotal } from '../../monitor/model/host-total.js';
import {
  type DeviceGroup,
  type DeviceLabel,
  ENERGY_DEVICE_OF_GROUP,
  type EnergyDevice,
  exportedEntries,
} from '../../platform/signal-catalogue.js';
import { counterWindowEnergy, type Gap, type WindowEnergy } from './counter-window.js';
import { type PrometheusClient, promqlRegexLiteral, type RangeSeries } from './prometheus.js';

/**
 * A job's energy from Prometheus: every node's joulegate energy counters over the job's window,
 * per device, per node (by the monitor's host total rule, so psys and packages are never counted
 * twice), in total, and as CO2 and cost with the monitor's post-processing factors.
 */
export type EnergyDeviceKind = EnergyDevice;

/** An energy counter the exporter publishes, as the catalogue describes it. */
export interface EnergyCounterMetric {
  metric: string;
  kind: EnergyDeviceKind;
  /** The device group of the host total rule (host-total.ts). */
  group: DeviceGroup;
  /** The label holding the device index; `board` has none. */
  label: DeviceLabel;
  outsidePlatform: boolean;
}

/** The catalogue's exported energy counters, in its order (the order devices are listed in). */
const ENERGY_COUNTERS: readonly EnergyCounterMetric[] = exportedEntries().flatMap((e) => {
  const kind = ENERGY_DEVICE_OF_GROUP[e.group];
  if (e.kind !== 'energy' || kind === undefined) return [];
  const { name: metric, device: label } = e.metric;
  return [{ metric, kind, group: e.group, label, outsidePlatform: e.outsidePlatform === true }];
});
const COUNTER_OF_METRIC = new Map(ENERGY_COUNTERS.map((c) => [c.metric, c]));

/** The exported energy counter of a device kind. */
export function energyCounterOf(kind: EnergyDeviceKind): EnergyCounterMetric {
  const counter = ENERGY_COUNTERS.find((c) => c.kind === kind);
  if (counter === undefined) throw new Error(`the catalogue exports no energy counter of ${kind}`);
  return counter;
}

const kindOrder = (kind: EnergyDeviceKind) => ENERGY_COUNTERS.findIndex((c) => c.kind === kind);

export interface JobWindow {
  /** Job id for the report's title, if any. */
  job?: string;
  nodes: string[];
  /** Unix seconds. */
  start: number;
  end: number;
  /** Scrape interval; default: each series' median sample spacing. */
  intervalS?: number;
}

export interface PostFactors {
  pue: number;
  /** gCO2e per kWh. */
  emissionsFactor: number;
  /** priceUnit per kWh. */
  priceFactor: number;
  priceUnit: string;
}

export interface DeviceWindowEnergy extends WindowEnergy {
  kind: EnergyDeviceKind;
  /** The device index label ("0"); "" for the board. */
  index: string;
}

export interface NodeWindowEnergy {
  node: string;
  /** Joules of the node by the host total rule; NaN when nothing was scraped from it. */
  joules: number;
  /** How the node total was formed (host-total.ts rule). */
  rule: string;
  /** Percent of the window the node's energy covers (the least covered device counts). */
  coverage: number;
  devices: DeviceWindowEnergy[];
}

export interface JobEnergyReport {
  kind: 'joulegate-job-report';
  version: 1;
  job: string;
  /** Where the figures come from: "Prometheus <url>" or "monitor reports <paths>". */
  source: string;
  created: string;
  start: string;
  end: string;
  windowS: number;
  nodes: NodeWindowEnergy[];
  /** Σ of the nodes that have data, J; `complete` false when a node or part of the window is missing. */
  energy: number;
  complete: boolean;
  /** energy × PUE. */
  facilityEnergy: number;
  /** grams CO2e. */
  co2: number;
  money: number;
  priceUnit: string;
  factors: PostFactors;
  /** Every gap, as one sentence each ("node b: no data 12:00:03–12:00:06 (3.0 s)"). */
  gaps: string[];
}

/** Margin queried on each side of the window, so its ends can be interpolated (Prometheus's default lookback). */
export const EDGE_MARGIN_S = 300;
const J_PER_KWH = 3.6e6;

const iso = (unixS: number) => new Date(unixS * 1000).toISOString();

const deviceName = (d: DeviceWindowEnergy) => (d.kind === 'board' ? 'board' : `${d.kind} ${d.index}`);

/** One sentence per gap of a node; a gap every device of the node shares is stated once. */
function describeGaps(n: NodeWindowEnergy): string[] {
  const what = {
    'no-data': 'no samples',
    restart: 'exporter restarted, energy before the restart unknown',
    bridged: 'scrapes missed, energy bridged by the counter (exact)',
  };
  const same = new Map<string, { gap: Gap; devices: string[] }>();
  for (const d of n.devices) {
    for (const gap of d.gaps) {
      const key = `${gap.kind} ${gap.start} ${gap.end}`;
      const entry = same.get(key) ?? { gap, devices: [] };
      entry.devices.push(deviceName(d));
      same.set(key, entry);
    }
  }
  return [...same.values()].map(({ gap, devices }) => {
    const where = devices.length === n.devices.length ? 'all devices' : devices.join(', ');
    const span = `${iso(gap.start)} to ${iso(gap.end)} (${(gap.end - gap.start).toFixed(1)} s)`;
    return `${n.node} (${where}): ${what[gap.kind]}, ${span}`;
  });
}

/** Groups a range query's series by node, then device. */
function byNode(series: readonly RangeSeries[]): Map<string, RangeSeries[]> {
  const out = new Map<string, RangeSeries[]>();
  for (const s of series) {
    const node = s.labels.node;
    if (node === undefined || !COUNTER_OF_METRIC.has(s.labels.__name__ ?? '')) continue;
    out.set(node, [...(out.get(node) ?? []), s]);
  }
  return out;
}

function nodeEnergy(node: string, series: readonly RangeSeries[], window: JobWindow): NodeWindowEnergy {
  const windowS = window.end - window.start;
  const devices: DeviceWindowEnergy[] = series
    .map((s) => {
      const { kind, label } = COUNTER_OF_METRIC.get(s.labels.__name__!)!;
      const index = label === 'board' ? '' : (s.labels[label] ?? '');
      const samples = [...s.samples].sort((a, b) => a.t - b.t);
      return { kind, index, ...counterWindowEnergy(samples, window.start, window.end, window.intervalS) };
    })
    .sort((a, b) => kindOrder(a.kind) - kindOrder(b.kind) || Number(a.index) - Number(b.index));
  const coverage =
    devices.length > 0 && windowS > 0 ? (Math.min(...devices.map((d) => d.coveredS)) / windowS) * 100 : 0;
  return { node, ...nodeTotal(devices), coverage, devices };
}

/** Queries Prometheus and builds the job's report. */
export async function jobEnergy(
  client: PrometheusClient,
  prometheus: string,
  window: JobWindow,
  factors: PostFactors,
  nowS = Date.now() / 1000,
): Promise<JobEnergyReport> {
  const nodes = window.nodes.map(promqlRegexLiteral).join('|');
  const queryEnd = Math.min(window.end + EDGE_MARGIN_S, Math.max(nowS, window.end));
  const rangeS = Math.ceil(queryEnd - (window.start - EDGE_MARGIN_S));
  const metrics = ENERGY_COUNTERS.map((c) => promqlRegexLiteral(c.metric)).join('|');
  const expr = `{__name__=~"${metrics}",node=~"${nodes}"}[${rangeS}s]`;
  const found = byNode(await client.rangeVector(expr, queryEnd));
  const perNode = window.nodes.map((n) => nodeEnergy(n, found.get(n) ?? [], window));
  return assembleJobReport(
    { job: window.job ?? '', source: `Prometheus ${prometheus}`, start: window.start, end: window.end },
    perNode,
    factors,
    nowS,
  );
}

/** What every job report says around its nodes. */
export interface JobReportHead {
  job: string;
  source: string;
  /** Unix seconds. */
  start: number;
  end: number;
}

/**
 * The totals, CO2, cost and gap list of a job from its nodes' energy (nodes from Prometheus or
 * from per-node monitor reports). `notes`: gaps found outside the devices' samples.
 */
export function assembleJobReport(
  head: JobReportHead,
  perNode: NodeWindowEnergy[],
  factors: PostFactors,
  nowS = Date.now() / 1000,
  notes: string[] = [],
): JobEnergyReport {
  const gaps: string[] = [];
  for (const n of perNode) {
    if (n.devices.length === 0)
      gaps.push(`${n.node}: no energy data for the window (node down, not scraped or no report)`);
    gaps.push(...describeGaps(n));
  }
  gaps.push(...notes);
  const withData = perNode.filter((n) => Number.isFinite(n.joules));
  const energy = withData.length === 0 ? Number.NaN : withData.reduce((a, n) => a + n.joules, 0);
  const complete =
    notes.length === 0 && perNode.every((n) => Number.isFinite(n.joules) && n.coverage >= 100 - 1e-9);
  const facilityEnergy = energy * factors.pue;
  const kwh = facilityEnergy / J_PER_KWH;
  return {
    kind: 'joulegate-job-report',
    version: 1,
    job: head.job,
    source: head.source,
    created: new Date(nowS * 1000).toISOString(),
    start: iso(head.start),
    end: iso(head.end),
    windowS: head.end - head.start,
    nodes: perNode,
    energy,
    complete,
    facilityEnergy,
    co2: kwh * factors.emissionsFactor,
    money: kwh * factors.priceFactor,
    priceUnit: factors.priceUnit,
    factors,
    gaps,
  };
}

/** A node's total from its devices by the monitor's host total rule; NaN without a device. */
export function nodeTotal(devices: readonly DeviceWindowEnergy[]): { joules: number; rule: string } {
  if (devices.length === 0) return { joules: Number.NaN, rule: 'no data' };
  const parts: EnergyPart[] = devices
    .filter((d) => Number.isFinite(d.joules))
    .map((d) => {
      const { group, outsidePlatform } = energyCounterOf(d.kind);
      return { group, energy: d.joules, outsidePlatform };
    });
  const total = hostTotal(parts);
  return { joules: total.energy, rule: total.total.rule };
}
