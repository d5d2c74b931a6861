import { Units } from './signal-info.js';

/**
 * What each signal means, in one table: the monitor samples the rows whose kind it has maths
 * for, the exporter publishes the rows with a metric, `sensors` gives a signal the device type of
 * the row it feeds, and `top` splits what the monitor samples. A new source is its backend folder
 * (signals with the catalogue's aliases, or `feeds` naming a row) plus rows here for quantities
 * the catalogue does not know yet.
 */

/** Device groups of the report (perun's, plus `board` for node-level sensors). */
export const DEVICE_GROUPS = ['cpu', 'gpu', 'ram', 'disk', 'net', 'board'] as const;
export type DeviceGroup = (typeof DEVICE_GROUPS)[number];

/**
 * What a series measures, which decides its maths: `energy` is a cumulative joule counter,
 * `power` an instantaneous watt value, `util` a percentage 0..100 (signals give a fraction; the
 * sampler stores percent, the one convention of every report), `memory` bytes in use, `bytes` a
 * cumulative byte counter.
 */
export const SERIES_KINDS = ['energy', 'power', 'util', 'memory', 'bytes'] as const;
export type SeriesKind = (typeof SERIES_KINDS)[number];

/**
 * What a catalogue row measures: a series kind (the monitor samples it), or a quantity the
 * monitor has no maths for: `frequency` (Hz), `temperature` (°C), `capacity` (bytes a device
 * holds or has free, not a use) and `identity` (a model or family number), `fan_speed` (RPM),
 * `power_limit` (a limit's setting in watts, not a measurement).
 */
export type SignalKind =
  | SeriesKind
  | 'frequency'
  | 'temperature'
  | 'capacity'
  | 'identity'
  | 'fan_speed'
  | 'power_limit';

/** How a group's energy was obtained, shown in every output. */
export type EnergyMethod = 'counter' | 'power-integrated' | 'estimated';

export interface SeriesSpec {
  /** Unique id: the sensor id (`CPU_ENERGY-package-0`) or a derived name. */
  id: string;
  signal: string;
  domain: string;
  index: number;
  group: DeviceGroup;
  kind: SeriesKind;
  /** Backend (IOGroup) that served it, or the monitor itself for derived series. */
  backend: string;
  /** For byte counters: which direction (disk/net read or write). */
  direction?: 'read' | 'write';
  /**
   * Hardware a board/platform sensor (RAPL psys) does not include: discrete GPUs, or a signal
   * its backend marks so. Its energy is added to such a sensor's (see the host total rule).
   */
  outsidePlatform?: true;
}

/** perun's sensor device classes (`sensors`), one per group; `other` for a signal no row knows. */
export type SensorDevice = 'node' | 'cpu' | 'gpu' | 'ram' | 'disk' | 'net' | 'other';
export const SENSOR_DEVICE_OF_GROUP: Readonly<Record<DeviceGroup, SensorDevice>> = {
  cpu: 'cpu',
  gpu: 'gpu',
  ram: 'ram',
  disk: 'disk',
  net: 'net',
  board: 'node',
};

/** The label an exported series carries its device index in (`package="0"`); none for the board. */
export type DeviceLabel = 'package' | 'gpu' | 'board';

/** The attribution engine's device kind of an energy metric (consumers are split per device). */
export type EnergyDevice = 'package' | 'dram' | 'gpu' | 'board';
export const ENERGY_DEVICE_OF_GROUP: Readonly<Partial<Record<DeviceGroup, EnergyDevice>>> = {
  cpu: 'package',
  ram: 'dram',
  gpu: 'gpu',
  board: 'board',
};

/**
 * The units a signal must declare to be taken for a row of this kind (skips a same-named signal
 * of another meaning); kinds without an SI unit check nothing.
 */
export const KIND_UNITS: Readonly<Partial<Record<SignalKind, Units>>> = {
  energy: Units.Joules,
  power: Units.Watts,
  frequency: Units.Hertz,
  temperature: Units.Celsius,
  power_limit: Units.Watts,
};

/**
 * A Prometheus metric. Names follow Prometheus's conventions: base units (joules, watts, hertz,
 * celsius), ratios 0..1, `_total` on counters.
 */
export interface ExportedMetric {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  device: DeviceLabel;
}

export interface CatalogueEntry {
  /** The high-level name (PlatformIO alias) this row describes. */
  alias: string;
  /** Other names of the same quantity, tried after the alias (a backend's own names). */
  otherNames?: readonly string[];
  group: DeviceGroup;
  kind: SignalKind;
  /** Read at each native index (per device) or once for the whole board. */
  perDevice: boolean;
  /** For byte counters: which direction. */
  direction?: 'read' | 'write';
  /** Outside the CPU platform whatever the backend says (discrete GPUs). */
  outsidePlatform?: true;
  /** Where the exporter publishes it. */
  metric?: ExportedMetric;
}

export type SignalCatalogue = readonly CatalogueEntry[];

/**
 * Order matters: the monitor takes power rows only for groups without an energy counter (a
 * counter is exact, integrated power is not), so energy rows come first; the exporter publishes
 * in this order.
 */
export const SIGNAL_CATALOGUE: SignalCatalogue = [
  {
    alias: 'CPU_ENERGY',
    group: 'cpu',
    kind: 'energy',
    perDevice: true,
    metric: {
      name: 'joulegate_package_energy_joules_total',
      help: 'Energy of a CPU package (RAPL package domain), wrap-corrected, since the exporter started.',
      type: 'counter',
      device: 'package',
    },
  },
  {
    alias: 'DRAM_ENERGY',
    group: 'ram',
    kind: 'energy',
    perDevice: true,
    metric: {
      name: 'joulegate_dram_energy_joules_total',
      help: 'Energy of the DRAM of a package (RAPL dram domain), wrap-corrected, since the exporter started.',
      type: 'counter',
      device: 'package',
    },
  },
  {
    alias: 'GPU_ENERGY',
    group: 'gpu',
    kind: 'energy',
    perDevice: true,
    outsidePlatform: true,
    metric: {
      name: 'joulegate_gpu_energy_joules_total',
      help: 'Energy of a GPU, since the exporter started.',
      type: 'counter',
      device: 'gpu',
    },
  },
  {
    alias: 'BOARD_ENERGY',
    group: 'board',
    kind: 'energy',
    perDevice: true,
    metric: {
      name: 'joulegate_board_energy_joules_total',
      help: 'Energy of the whole platform (RAPL psys), wrap-corrected, since the exporter started.',
      type: 'counter',
      device: 'board',
    },
  },
  {
    alias: 'CPU_POWER',
    group: 'cpu',
    kind: 'power',
    perDevice: true,
    metric: {
      name: 'joulegate_package_power_watts',
      help: 'Power of a CPU package.',
      type: 'gauge',
      device: 'package',
    },
  },
  {
    alias: 'DRAM_POWER',
    group: 'ram',
    kind: 'power',
    perDevice: true,
    metric: {
      name: 'joulegate_dram_power_watts',
      help: 'Power of the DRAM of a package.',
      type: 'gauge',
      device: 'package',
    },
  },
  {
    alias: 'GPU_POWER',
    group: 'gpu',
    kind: 'power',
    perDevice: true,
    outsidePlatform: true,
    metric: { name: 'joulegate_gpu_power_watts', help: 'Power of a GPU.', type: 'gauge', device: 'gpu' },
  },
  {
    alias: 'BOARD_POWER',
    group: 'board',
    kind: 'power',
    perDevice: true,
    metric: {
      name: 'joulegate_board_power_watts',
      help: 'Power of the whole platform (RAPL psys).',
      type: 'gauge',
      device: 'board',
    },
  },
  {
    alias: 'CPU_UTILIZATION',
    group: 'cpu',
    kind: 'util',
    perDevice: false,
    metric: {
      name: 'joulegate_cpu_utilization_ratio',
      help: 'Busy fraction of all CPUs of the node since the previous scrape (0..1).',
      type: 'gauge',
      device: 'board',
    },
  },
  {
    alias: 'GPU_UTILIZATION',
    group: 'gpu',
    kind: 'util',
    perDevice: true,
    metric: {
      name: 'joulegate_gpu_utilization_ratio',
      help: 'Busy fraction of a GPU (0..1).',
      type: 'gauge',
      device: 'gpu',
    },
  },
  { alias: 'GPU_MEMORY_USED', group: 'gpu', kind: 'memory', perDevice: true },
  {
    alias: 'MEMORY_USED',
    otherNames: ['RAM_USED', 'MEM_USED'],
    group: 'ram',
    kind: 'memory',
    perDevice: false,
  },
  { alias: 'DISK_READ_BYTES', group: 'disk', kind: 'bytes', perDevice: false, direction: 'read' },
  { alias: 'DISK_WRITE_BYTES', group: 'disk', kind: 'bytes', perDevice: false, direction: 'write' },
  {
    alias: 'NET_READ_BYTES',
    otherNames: ['NET_RX_BYTES'],
    group: 'net',
    kind: 'bytes',
    perDevice: false,
    direction: 'read',
  },
  {
    alias: 'NET_WRITE_BYTES',
    otherNames: ['NET_TX_BYTES'],
    group: 'net',
    kind: 'bytes',
    perDevice: false,
    direction: 'write',
  },
  {
    alias: 'CPU_FREQUENCY_STATUS',
    group: 'cpu',
    kind: 'frequency',
    perDevice: true,
    metric: {
      name: 'joulegate_cpu_frequency_hertz',
      help: 'Mean current frequency of the CPUs of a package.',
      type: 'gauge',
      device: 'package',
    },
  },
  {
    alias: 'GPU_CORE_FREQUENCY_STATUS',
    group: 'gpu',
    kind: 'frequency',
    perDevice: true,
    metric: {
      name: 'joulegate_gpu_frequency_hertz',
      help: 'Current core frequency of a GPU.',
      type: 'gauge',
      device: 'gpu',
    },
  },
  {
    alias: 'CPU_PACKAGE_TEMPERATURE',
    group: 'cpu',
    kind: 'temperature',
    perDevice: true,
    metric: {
      name: 'joulegate_package_temperature_celsius',
      help: 'Temperature of a CPU package.',
      type: 'gauge',
      device: 'package',
    },
  },
  {
    alias: 'GPU_TEMPERATURE',
    group: 'gpu',
    kind: 'temperature',
    perDevice: true,
    metric: {
      name: 'joulegate_gpu_temperature_celsius',
      help: 'Temperature of a GPU.',
      type: 'gauge',
      device: 'gpu',
    },
  },
  {
    alias: 'CPU_POWER_LIMIT_CONTROL',
    group: 'cpu',
    kind: 'power_limit',
    perDevice: true,
    metric: {
      name: 'joulegate_package_power_limit_watts',
      help: "A CPU package's long-term power limit (RAPL PL1) as set now.",
      type: 'gauge',
      device: 'package',
    },
  },
  // Known to `sensors` only: node sensors hwmon finds, one signal per zone or fan (`feeds`).
  { alias: 'THERMAL_ZONE_TEMPERATURE', group: 'board', kind: 'temperature', perDevice: false },
  { alias: 'FAN_SPEED', group: 'board', kind: 'fan_speed', perDevice: false },
  // Known to `sensors` only: constants of the node.
  { alias: 'CPU_FREQUENCY_STICKER', group: 'cpu', kind: 'frequency', perDevice: false },
  { alias: 'CPU_FREQUENCY_STEP', group: 'cpu', kind: 'frequency', perDevice: false },
  { alias: 'CPU_FREQUENCY_MIN_AVAIL', group: 'cpu', kind: 'frequency', perDevice: false },
  { alias: 'CPU_FREQUENCY_MAX_AVAIL', group: 'cpu', kind: 'frequency', perDevice: false },
  { alias: 'CPU_FAMILY', group: 'cpu', kind: 'identity', perDevice: false },
  { alias: 'CPU_MODEL', group: 'cpu', kind: 'identity', perDevice: false },
  { alias: 'CPU_STEPPING', group: 'cpu', kind: 'identity', perDevice: false },
  { alias: 'MEMORY_TOTAL', group: 'ram', kind: 'capacity', perDevice: false },
  { alias: 'MEMORY_AVAILABLE', group: 'ram', kind: 'capacity', perDevice: false },
];

/** The names that stand for a row's quantity, in the order they are tried. */
export function namesOf(entry: CatalogueEntry): readonly string[] {
  return [entry.alias, ...(entry.otherNames ?? [])];
}

/**
 * Whether a signal name is one of a row's names: the name itself (`CPU_ENERGY`) or a backend's
 * low-level name ending in it (`PROCFS::MEMORY_USED`). The one matching rule of every reader.
 */
export function isNamed(signal: string, name: string): boolean {
  return signal === name || signal.endsWith(`::${name}`);
}

/** The row one of whose names the signal is, if any. */
export function entryNamed(signal: string, catalogue: SignalCatalogue = SIGNAL_CATALOGUE) {
  return catalogue.find((e) => namesOf(e).some((n) => isNamed(signal, n)));
}

/** The row of an alias exactly (a backend's `feeds`), if any. */
export function entryOfAlias(alias: string, catalogue: SignalCatalogue = SIGNAL_CATALOGUE) {
  return catalogue.find((e) => e.alias === alias);
}

export function isSeriesKind(kind: SignalKind): kind is SeriesKind {
  return (SERIES_KINDS as readonly string[]).includes(kind);
}

/** A row the monitor samples: its kind is one the report has maths for. */
export type SampledEntry = CatalogueEntry & { kind: SeriesKind };
export function sampledEntries(catalogue: SignalCatalogue = SIGNAL_CATALOGUE): SampledEntry[] {
  return catalogue.filter((e): e is SampledEntry => isSeriesKind(e.kind));
}

/** A row the exporter publishes. */
export type ExportedEntry = CatalogueEntry & { metric: ExportedMetric };
export function exportedEntries(catalogue: SignalCatalogue = SIGNAL_CATALOGUE): ExportedEntry[] {
  return catalogue.filter((e): e is ExportedEntry => e.metric !== undefined);
}
