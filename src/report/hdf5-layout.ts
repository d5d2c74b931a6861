import { setFlagsFromString } from 'node:v8';
import { importModule } from '../platform/dynamic-import.js';
import type { DeviceGroup, EnergyMethod } from '../platform/signal-catalogue.js';

/*
 * Names shared by the HDF5 writer (hdf5.ts) and reader (hdf5-read.ts): perun's layout
 * (docs/reference/perun-files.md#data-tree, #hdf5-file) and the attributes and datasets joulegate adds to it so
 * that a report can be rebuilt from the tree alone.
 */

export type H5 = typeof import('h5wasm/node');
export type Group = InstanceType<H5['Group']>;
export type Dataset = InstanceType<H5['Dataset']>;
export type Node = Group | Dataset;

/**
 * h5wasm is loaded only when HDF5 is read (`joulegate export`; reports are written by
 * hdf5-file/, without it: importing it alone costs ~40 MB of RSS), and compiled by V8's baseline
 * compiler only: optimising its 4 MB of wasm as well cost ~27 MB of peak RSS more.
 */
export async function loadH5(): Promise<H5> {
  setFlagsFromString('--liftoff-only');
  const h5 = await importModule<H5>('h5wasm/node');
  await h5.ready;
  return h5;
}

/** perun's NodeType values, stored as the `type` attribute of each node group. */
export const NODE_TYPE = { APP: 1, MULTI_RUN: 2, RUN: 3, NODE: 4, DEVICE_GROUP: 5, SENSOR: 6 } as const;

/**
 * perun's MetricType values. perun's reader rebuilds each metric with MetricType(type) and
 * names its group after the enum member, so only these may appear under `metrics/`.
 */
export const PERUN_METRICS = new Set([
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
export type PerunUnit = 'J' | 'W' | 'B' | 's' | '%' | '' | 'g' | 'Hz';
export type Aggregate = 'sum' | 'mean' | 'max' | 'min';

/** The group name of a metric under `metrics/`: perun's MetricType member name. */
export const metricGroupName = (metric: string) =>
  metric === 'other_memory' ? 'OTHER_MEM' : metric.toUpperCase();

/** perun's DeviceType of each device group (it has no "board": that is OTHER). */
export const DEVICE_TYPE: Record<DeviceGroup, string> = {
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

/** The values of a device group's GroupMetrics that hold numbers. */
export const GROUP_VALUE_KEYS = ['energy', 'power', 'util', 'memory', 'readBytes', 'writeBytes'] as const;
type GroupValue = (typeof GROUP_VALUE_KEYS)[number];

/** Where one value of a device group's metrics lives on its DEVICE_GROUP node. */
export interface GroupValuePlace {
  /** The perun metric holding it; when undefined, the attribute does. */
  metric?: string;
  unit: PerunUnit;
  agg: Aggregate;
  attribute: string;
}

const GROUP_VALUES: Record<
  GroupValue,
  { metric: (g: DeviceGroup) => string } & Omit<GroupValuePlace, 'metric'>
> = {
  energy: { metric: (g) => `${METRIC_PREFIX[g]}_energy`, unit: 'J', agg: 'sum', attribute: 'energy_J' },
  power: { metric: (g) => `${METRIC_PREFIX[g]}_power`, unit: 'W', agg: 'sum', attribute: 'power_W' },
  util: { metric: (g) => `${METRIC_PREFIX[g]}_util`, unit: '%', agg: 'mean', attribute: 'util_percent' },
  memory: {
    metric: (g) => (g === 'board' ? 'other_memory' : `${METRIC_PREFIX[g]}_mem`),
    unit: 'B',
    agg: 'sum',
    attribute: 'memory_B',
  },
  readBytes: { metric: (g) => `${g}_read`, unit: 'B', agg: 'sum', attribute: 'read_B' },
  writeBytes: { metric: (g) => `${g}_write`, unit: 'B', agg: 'sum', attribute: 'write_B' },
};

/**
 * The perun metric of that name when perun has one, else an attribute (perun has no
 * DISK_UTIL, CPU_MEM, …). Estimated energy and power are never perun metrics (a reader would
 * take them for measurements): they are the ESTIMATED_ATTRS attributes.
 */
export function groupValuePlace(group: DeviceGroup, key: GroupValue, method?: EnergyMethod): GroupValuePlace {
  const { metric, ...place } = GROUP_VALUES[key];
  if (method === 'estimated' && (key === 'energy' || key === 'power'))
    return { ...place, attribute: ESTIMATED_ATTRS[key] };
  const name = metric(group);
  return PERUN_METRICS.has(name) ? { ...place, metric: name } : place;
}

/** Attributes of estimated energy and power (on RUN and DEVICE_GROUP nodes). */
export const ESTIMATED_ATTRS = { energy: 'estimated_energy_J', power: 'estimated_power_W' } as const;

/**
 * On a Stats metric group over one value: its std is stored as 0.0, as perun stores it (numpy's
 * std of one value; perun's bench export writes it as the entry's "range", and NaN there is not
 * JSON), while joulegate's own model has no spread for one value (NaN): this attribute marks it,
 * and joulegate's reader makes the std NaN again.
 */
export const ONE_VALUE_ATTR = 'joulegate_one_value';

/** Attributes joulegate puts on a MULTI_RUN besides the config (perun's `section.option` keys). */
export const MULTI_RUN_ATTRS = {
  appName: 'app_name',
  /** perun's: the start as naive local ISO time (naiveLocalTime), as perun writes it. */
  created: 'execution_dt',
  /** The start exactly as the report has it (ISO with Z), which execution_dt cannot keep. */
  createdExact: 'joulegate_created',
  rounds: 'n_runs',
  failed: 'failed',
  priceUnit: 'price_unit',
  failure: 'failure',
  samplingPeriod: 'sampling_period_s',
  warmupRounds: 'warmup_rounds',
  omittedRounds: 'omitted_rounds',
} as const;

/** Attributes joulegate puts on a RUN besides the host metadata. */
export const RUN_ATTRS = {
  estimatedEnergy: ESTIMATED_ATTRS.energy,
  estimatedPower: ESTIMATED_ATTRS.power,
  exitStatus: 'exit_status',
  exitCode: 'exit_code',
  exitSignal: 'exit_signal',
  overruns: 'sampling_overruns',
} as const;

/** Attributes of a RUN with the host total rule's decision and figures (HostTotal). */
export const HOST_TOTAL_ATTRS = {
  rule: 'host_total_rule',
  boardEnergy: 'host_total_board_J',
  coveredGroups: 'host_total_covered_groups',
  coveredEnergy: 'host_total_covered_J',
  outsideGroups: 'host_total_outside_groups',
  outsideEnergy: 'host_total_outside_J',
} as const;

/** Attributes of a DEVICE_GROUP saying how its energy was measured (the report's sources). */
export const SOURCE_ATTRS = {
  method: 'energy_method',
  coverage: 'energy_coverage_percent',
  series: 'energy_source_series',
  detail: 'energy_source_detail',
  wattsPerUnit: 'watts_per_unit',
} as const;

/** Attributes of a SENSOR describing its series. */
export const SENSOR_ATTRS = {
  signal: 'signal',
  domain: 'domain',
  index: 'domain_index',
  kind: 'kind',
  backend: 'backend',
  direction: 'direction',
  outsidePlatform: 'outside_platform',
  position: 'series_index',
} as const;

/**
 * joulegate's own children of a RUN and MULTI_RUN (perun reads only `metrics`, `nodes` and
 * `regions`): datasets of equal length, one entry per event, call, problem or diagnostic.
 */
export const TABLES = {
  /** RUN: region start/stop events as the app sent them: name, kind, t (and call, when sent). */
  events: 'region_events',
  /**
   * RUN: per region call, in call order: name, depth, open, energy, power, estimated_energy,
   * cpu_util, gpu_util and energy_<group> per measured group. Start and stop are perun's
   * `regions/<name>/raw_data/0` pairs, in the same order per name.
   */
  calls: 'region_calls',
  /** RUN: counter anomalies and region pairing problems: text. */
  problems: 'problems',
  /** MULTI_RUN: what could not be measured: backend, signal ('' for none), reason. */
  unavailable: 'unavailable',
  /**
   * MULTI_RUN: `monitor --attribute` (attributes idle_share, app): tables `groups` (group,
   * method, measured, app, others, unattributed, idle, missing_intervals, missing_seconds),
   * `consumers` (id), `consumer_energy` (consumer index, group, energy) and `notes` (text).
   */
  attribution: 'attribution',
} as const;

/** Column of the region_calls table with one group's energy of each call. */
export const GROUP_ENERGY_COLUMN = 'energy_';

/**
 * An ISO time as perun writes its `*_dt` attributes (datetime.now().isoformat()): local time,
 * no zone, microseconds. perun compares them with naive datetimes, so one ending in `Z` breaks
 * its `export`.
 */
export function naiveLocalTime(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds() * 1000, 6)}`
  );
}

/** HDF5 names nest at '/': ids keep their text otherwise (and an `id` attribute keeps it whole). */
export const nodeName = (id: string) => id.replace(/\//g, '_');
