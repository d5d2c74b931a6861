import { type EnergyPart, hostTotal } from '../../monitor/model/host-total.js';
import {
  type DeviceGroup,
  type DeviceLabel,
  ENERGY_DEVICE_OF_GROUP,
  type EnergyDevice,
  exportedEntries,
} from '../../platform/signal-catalogue.js';
import {
  type CounterSample,
  counterWindowEnergy,
  type Gap,
  medianSpacing,
  type WindowEnergy,
} from './counter-window.js';
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
  /** What the report must say about how the window was formed. */
  notes?: string[];
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

/**
 * The job's own share of a node's energy, from the exporter's per-consumer counters
 * (`joulegate_consumer_energy_joules_total{consumer="slurm:<id>"}`).
 */
export interface JobShareEnergy {
  /** Joules attributed to the job on the node; NaN when the node has no counters for it. */
  joules: number;
  /** Percent of the window the share covers (the least covered device counts). */
  coverage: number;
  devices: DeviceWindowEnergy[];
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
  /** The job's attributed share (a Slurm job with per-consumer counters only). */
  job?: JobShareEnergy;
}

/** The job's share in total, and how it is formed. */
export interface JobShareTotal {
  /** The consumer whose counters were read ("slurm:42"). */
  consumer: string;
  /** Σ of the nodes' shares that have data, J. */
  energy: number;
  /** False when a node has no share or a share does not cover the whole window. */
  complete: boolean;
  /** The method and its limits, one sentence. */
  method: string;
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
  /** The job's own share of the nodes' energy, next to the nodes' energy (Slurm jobs). */
  jobShare?: JobShareTotal;
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

/** Groups a range query's series of the metrics `wanted` by node. */
function byNode(
  series: readonly RangeSeries[],
  wanted: (metric: string) => boolean,
): Map<string, RangeSeries[]> {
  const out = new Map<string, RangeSeries[]>();
  for (const s of series) {
    const node = s.labels.node;
    if (node === undefined || !wanted(s.labels.__name__ ?? '')) continue;
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

/** The exporter's per-consumer counter (exposition.ts) and the device kinds it splits. */
export const CONSUMER_COUNTER = 'joulegate_consumer_energy_joules_total';
const SPLIT_DEVICES: readonly EnergyDeviceKind[] = ['package', 'dram', 'gpu'];

/** How a job's share is formed and what it leaves out (docs/exporter.md, "A job's own energy"). */
export const JOB_SHARE_METHOD =
  "job share = each package's and DRAM's energy split among the node's consumers by CPU time and each GPU's by its processes' use " +
  "(the exporter's joulegate_consumer_energy_joules_total); board energy, power no process used (idle) and the time before " +
  "the exporter first saw the job's cgroup are in no job's share";

/** The consumer id the exporter gives a Slurm job; undefined for an id that is not a job number. */
export function slurmConsumer(job: string | undefined): string | undefined {
  return job !== undefined && /^\d+$/.test(job) ? `slurm:${job}` : undefined;
}

/**
 * Energy of a per-consumer counter in [start, end]. The exporter creates such a series at the
 * consumer's first share of a device, so the counter was 0 one scrape before its first sample;
 * that zero is added before the samples are read as any counter's (restarts, gaps, ends).
 */
export function consumerWindowEnergy(
  samples: readonly CounterSample[],
  start: number,
  end: number,
  intervalS: number | undefined,
): WindowEnergy {
  const first = samples[0];
  if (first === undefined || intervalS === undefined)
    return counterWindowEnergy(samples, start, end, intervalS);
  return counterWindowEnergy([{ t: first.t - intervalS, v: 0 }, ...samples], start, end, intervalS);
}

function jobShareOf(series: readonly RangeSeries[], window: JobWindow, intervalS?: number): JobShareEnergy {
  const windowS = window.end - window.start;
  const devices: DeviceWindowEnergy[] = series
    .filter((s) => (SPLIT_DEVICES as readonly string[]).includes(s.labels.device ?? ''))
    .map((s) => {
      const samples = [...s.samples].sort((a, b) => a.t - b.t);
      const energy = consumerWindowEnergy(
        samples,
        window.start,
        window.end,
        intervalS ?? medianSpacing(samples),
      );
      return { kind: s.labels.device as EnergyDeviceKind, index: '', ...energy };
    })
    .sort((a, b) => kindOrder(a.kind) - kindOrder(b.kind));
  if (devices.length === 0) return { joules: Number.NaN, coverage: 0, devices };
  const known = devices.filter((d) => Number.isFinite(d.joules));
  const joules = known.length === 0 ? Number.NaN : known.reduce((a, d) => a + d.joules, 0);
  const coverage = windowS > 0 ? (Math.min(...devices.map((d) => d.coveredS)) / windowS) * 100 : 0;
  return { joules, coverage, devices };
}

/** The job's share on each node (set on the nodes) and in total. */
function addJobShare(
  perNode: NodeWindowEnergy[],
  consumer: string,
  found: Map<string, RangeSeries[]>,
  window: JobWindow,
  nodeSeries: Map<string, RangeSeries[]>,
): JobShareTotal {
  for (const n of perNode) {
    // The node's own counters give the scrape interval when a share has too few samples to tell.
    const spacing = window.intervalS ?? medianSpacing(nodeSeries.get(n.node)?.[0]?.samples ?? []);
    n.job = jobShareOf(found.get(n.node) ?? [], window, spacing);
  }
  const withData = perNode.flatMap((n) => (n.job && Number.isFinite(n.job.joules) ? [n.job.joules] : []));
  return {
    consumer,
    energy: withData.length === 0 ? Number.NaN : withData.reduce((a, b) => a + b, 0),
    complete: perNode.every(
      (n) => n.job !== undefined && Number.isFinite(n.job.joules) && n.job.coverage >= 100 - 1e-9,
    ),
    method: JOB_SHARE_METHOD,
  };
}

/** Raw samples of `selector` over the job's window and its margins (the ends are interpolated). */
async function rangeOverWindow(
  client: PrometheusClient,
  selector: string,
  window: JobWindow,
  nowS: number,
): Promise<RangeSeries[]> {
  const queryEnd = Math.min(window.end + EDGE_MARGIN_S, Math.max(nowS, window.end));
  const rangeS = Math.ceil(queryEnd - (window.start - EDGE_MARGIN_S));
  return client.rangeVector(`${selector}[${rangeS}s]`, queryEnd);
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
  const metrics = ENERGY_COUNTERS.map((c) => promqlRegexLiteral(c.metric)).join('|');
  const found = byNode(
    await rangeOverWindow(client, `{__name__=~"${metrics}",node=~"${nodes}"}`, window, nowS),
    (name) => COUNTER_OF_METRIC.has(name),
  );
  const perNode = window.nodes.map((n) => nodeEnergy(n, found.get(n) ?? [], window));
  const consumer = slurmConsumer(window.job);
  let jobShare: JobShareTotal | undefined;
  if (consumer !== undefined) {
    const selector = `${CONSUMER_COUNTER}{consumer="${consumer}",node=~"${nodes}"}`;
    const shares = byNode(
      await rangeOverWindow(client, selector, window, nowS),
      (name) => name === CONSUMER_COUNTER,
    );
    jobShare = addJobShare(perNode, consumer, shares, window, found);
  }
  const report = assembleJobReport(
    { job: window.job ?? '', source: `Prometheus ${prometheus}`, start: window.start, end: window.end },
    perNode,
    factors,
    nowS,
  );
  report.gaps.push(...(window.notes ?? []));
  if (jobShare !== undefined) {
    report.jobShare = jobShare;
    for (const n of perNode) {
      if (n.job !== undefined && n.job.devices.length === 0 && n.devices.length > 0)
        report.gaps.push(
          `${n.node}: no ${CONSUMER_COUNTER}{consumer="${consumer}"} (the exporter runs without --consumers slurm, or saw no cgroup of the job): its share is unknown`,
        );
    }
  }
  return report;
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
