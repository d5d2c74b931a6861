import { type Aggregation, aggregationName } from './aggregation.js';
import { type DomainType, domainName } from './domains.js';
import type { FormatType } from './format.js';

/** Signal behaviour with GEOPM's enum values (IOGroup::m_signal_behavior_e). */
export enum Behavior {
  Constant = 0,
  Monotone = 1,
  Variable = 2,
  Label = 3,
}
export const BEHAVIOR_NAMES: readonly string[] = ['constant', 'monotone', 'variable', 'label'];

/** SI units with GEOPM's enum order (IOGroup::m_units_e). */
export enum Units {
  None = 0,
  Seconds = 1,
  Hertz = 2,
  Watts = 3,
  Joules = 4,
  Celsius = 5,
  Amperes = 6,
  Volts = 7,
  /** Not GEOPM's: fan speed as hwmon reports it (revolutions per minute). */
  Rpm = 8,
}
export const UNITS_NAMES: readonly string[] = [
  'none',
  'seconds',
  'hertz',
  'watts',
  'joules',
  'celsius',
  'amperes',
  'volts',
  'rpm',
];
/** Short unit symbols for sensor listings (perun style). */
export const UNITS_SYMBOLS: readonly string[] = ['', 's', 'Hz', 'W', 'J', '°C', 'A', 'V', 'RPM'];

export function parseUnits(name: string): Units {
  const idx = UNITS_NAMES.indexOf(name);
  if (idx < 0) throw new RangeError(`unknown units: ${name}`);
  return idx as Units;
}
export function parseBehavior(name: string): Behavior {
  const idx = BEHAVIOR_NAMES.indexOf(name);
  if (idx < 0) throw new RangeError(`unknown behavior: ${name}`);
  return idx as Behavior;
}

/** What a signal or control is, independent of its name and of who serves it. */
export interface SignalSpec {
  description: string;
  domain: DomainType;
  aggregation: Aggregation;
  format: FormatType;
  behavior: Behavior;
  units: Units;
  /**
   * True for hardware outside the CPU platform that a board/platform sensor (RAPL psys) does
   * not include, e.g. an accelerator card's own sensor: the monitor adds it to such a sensor.
   */
  outsidePlatform?: boolean;
  /**
   * For a signal that has no alias of a catalogue row and is not named like one: the alias of the
   * row whose meaning it carries (platform/signal-catalogue.ts), e.g. a raw register of DRAM energy.
   */
  feeds?: string;
  /**
   * For a counter that wraps (RAPL's energy_uj): how far it counts before it wraps, in its
   * units. A reader in a new process starts from the raw value, below this, so a consumer that
   * kept an earlier process's reading can tell how far the counter advanced in between.
   */
  counterRange?: number;
}

/** Everything a caller needs to know about one signal or control. */
export interface SignalInfo extends SignalSpec {
  /** Full name, e.g. `CPUFREQ::SCALING_CUR_FREQ` or the alias `CPU_FREQUENCY_STATUS`. */
  name: string;
  /** For aliases, the low-level name this one stands for. */
  aliasFor?: string;
  /** Name of the backend (IOGroup) that serves it. */
  backend: string;
}

export type ControlInfo = SignalInfo;

/**
 * The multi-line description GEOPM's --info prints (description/units/aggregation/domain/iogroup,
 * alias_for for an alias), plus `feeds` for a signal that names its catalogue row.
 */
export function describe(info: SignalInfo): string {
  const lines = [
    `    description: ${info.description}`,
    `    units: ${UNITS_NAMES[info.units]}`,
    `    aggregation: ${aggregationName(info.aggregation)}`,
    `    domain: ${domainName(info.domain)}`,
    `    iogroup: ${info.backend}`,
  ];
  if (info.aliasFor) lines.push(`    alias_for: ${info.aliasFor}`);
  // Ours, not GEOPM's: lets a client of the daemon give the signal its catalogue row.
  if (info.feeds) lines.push(`    feeds: ${info.feeds}`);
  return lines.join('\n');
}

/** One saved control setting, GEOPM's saved_controls.schema.json shape. */
export interface SavedControl {
  name: string;
  domain_type: number;
  domain_idx: number;
  setting: number;
}
