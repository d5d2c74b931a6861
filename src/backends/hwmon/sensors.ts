import { Aggregation } from '../../platform/aggregation.js';
import { Behavior, Units } from '../../platform/signal-info.js';

/** One kind of hwmon attribute: how the kernel scales it and what joulegate calls it. */
export interface SensorKind {
  /** File prefix and attribute: `temp` + `input` for tempN_input. */
  prefix: string;
  attr: 'input' | 'average';
  /** The file holds value × divisor (milli- or micro-units). */
  divisor: number;
  units: Units;
  /** Last word of the signal name. */
  quantity: string;
  behavior: Behavior;
  aggregation: Aggregation;
  what: string;
}

/** The hwmon sysfs ABI (Documentation/hwmon/sysfs-interface.rst) for the sensors joulegate reads. */
export const SENSOR_KINDS: readonly SensorKind[] = [
  {
    prefix: 'temp',
    attr: 'input',
    divisor: 1e3,
    units: Units.Celsius,
    quantity: 'TEMP',
    behavior: Behavior.Variable,
    aggregation: Aggregation.Average,
    what: 'Temperature',
  },
  {
    prefix: 'power',
    attr: 'input',
    divisor: 1e6,
    units: Units.Watts,
    quantity: 'POWER',
    behavior: Behavior.Variable,
    aggregation: Aggregation.Sum,
    what: 'Power',
  },
  {
    prefix: 'power',
    attr: 'average',
    divisor: 1e6,
    units: Units.Watts,
    quantity: 'POWER_AVERAGE',
    behavior: Behavior.Variable,
    aggregation: Aggregation.Sum,
    what: 'Average power (chip-defined interval)',
  },
  {
    prefix: 'energy',
    attr: 'input',
    divisor: 1e6,
    units: Units.Joules,
    quantity: 'ENERGY',
    behavior: Behavior.Monotone,
    aggregation: Aggregation.Sum,
    what: 'Energy counter',
  },
  {
    prefix: 'in',
    attr: 'input',
    divisor: 1e3,
    units: Units.Volts,
    quantity: 'VOLTAGE',
    behavior: Behavior.Variable,
    aggregation: Aggregation.Average,
    what: 'Voltage',
  },
  {
    prefix: 'curr',
    attr: 'input',
    divisor: 1e3,
    units: Units.Amperes,
    quantity: 'CURRENT',
    behavior: Behavior.Variable,
    aggregation: Aggregation.Sum,
    what: 'Current',
  },
];

/** Chips with one instance per CPU package; the rest describe the board. */
export const PER_PACKAGE_CHIPS: ReadonlySet<string> = new Set(['coretemp', 'k10temp', 'zenpower']);

/** `temp3_input` → its kind and channel; undefined for files joulegate does not read. */
export function parseSensorFile(file: string): { kind: SensorKind; channel: string } | undefined {
  const m = /^([a-z]+)(\d+)_(input|average)$/.exec(file);
  if (!m) return undefined;
  const kind = SENSOR_KINDS.find((k) => k.prefix === m[1] && k.attr === m[3]);
  return kind ? { kind, channel: `${m[1]}${m[2]}` } : undefined;
}

/** Upper-case words joined by `_`: "Package id 0" → PACKAGE_ID_0. */
export function nameWord(text: string): string {
  return text
    .trim()
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** Signal name (without HWMON::) for one sensor: chip, label (or channel), quantity. */
export function sensorSignalName(
  chip: string,
  label: string | undefined,
  channel: string,
  kind: SensorKind,
): string {
  const middle = label && nameWord(label) !== '' ? nameWord(label) : nameWord(channel);
  return `${nameWord(chip)}_${middle}_${kind.quantity}`;
}

/** Physical package named by a coretemp label ("Package id 1"), if any. */
export function packageFromLabel(label: string): number | undefined {
  const m = /^Package id (\d+)$/i.exec(label.trim());
  return m ? Number(m[1]) : undefined;
}
