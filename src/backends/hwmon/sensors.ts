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
  /** Channels of one label add up to something meaningful (two rails' watts or joules). */
  summable: boolean;
  /** The catalogue row the signals of this kind feed, for those known to no other row. */
  feeds?: string;
}

/** The hwmon sysfs ABI (Documentation/hwmon/sysfs-interface.rst) for the sensors joulegate reads. */
export const SENSOR_KINDS: readonly SensorKind[] = [
  {
    prefix: 'temp',
    attr: 'input',
    divisor: 1e3,
    units: Units.Celsius,
    quantity: 'TEMP',
    summable: false,
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
    summable: true,
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
    summable: true,
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
    summable: true,
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
    summable: false,
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
    summable: false,
    behavior: Behavior.Variable,
    aggregation: Aggregation.Sum,
    what: 'Current',
  },
  {
    prefix: 'fan',
    attr: 'input',
    divisor: 1,
    units: Units.Rpm,
    quantity: 'FAN_SPEED',
    summable: false,
    behavior: Behavior.Variable,
    aggregation: Aggregation.Average,
    what: 'Fan speed',
    feeds: 'FAN_SPEED',
  },
  {
    // amdgpu's shader and memory clocks (freq1 "sclk", freq2 "mclk"), in Hz.
    prefix: 'freq',
    attr: 'input',
    divisor: 1,
    units: Units.Hertz,
    quantity: 'FREQUENCY',
    summable: false,
    behavior: Behavior.Variable,
    aggregation: Aggregation.Average,
    what: 'Clock frequency',
  },
];

/** The kind of a thermal zone's `temp` file: millidegrees like hwmon's tempN_input. */
export const THERMAL_ZONE_KIND: SensorKind = {
  ...SENSOR_KINDS.find((k) => k.prefix === 'temp')!,
  what: 'Thermal zone temperature',
  feeds: 'THERMAL_ZONE_TEMPERATURE',
};

/** Chips with one instance per CPU package; the rest describe the board. */
export const PER_PACKAGE_CHIPS: ReadonlySet<string> = new Set(['coretemp', 'k10temp', 'zenpower']);

/**
 * Joins a name word to an index or channel. `nameWord` never yields two underscores in a row, so
 * `INA3221__1` cannot be the word of a chip really named "ina3221_1".
 */
export const QUALIFIER_SEPARATOR = '__';

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

/** What a chip's name can be taken from, each absent when its file or link is. */
export interface ChipNameSources {
  /** The chip directory (`/sys/class/hwmon/hwmon4`). */
  dir: string;
  /** Content of `name`. */
  name?: string;
  /** Content of `device/name` (older drivers, e.g. applesmc, keep it there). */
  deviceName?: string;
  /** Where the `device` link leads (`/sys/devices/platform/applesmc.768`). */
  devicePath?: string;
}

/**
 * A chip's name: `name`, else `device/name`, else the device's bus and id from its path
 * (`platform_applesmc.768`, node_exporter's choice), else the hwmon directory's own name.
 */
export function chipName(src: ChipNameSources): string {
  for (const text of [src.name, src.deviceName]) if (text && nameWord(text) !== '') return text.trim();
  const derived = (src.devicePath ?? '').split('/').filter(Boolean).slice(-2).join('_');
  if (nameWord(derived) !== '') return derived;
  return src.dir.replace(/\/+$/, '').replace(/^.*\//, '');
}

/**
 * Words for things that share a name space, in their stable order (device path, zone number): a
 * word held once stays as it is; a word held by several becomes `WORD__0`, `WORD__1`, … in order.
 */
export function indexedWords(words: readonly string[]): string[] {
  const count = new Map<string, number>();
  for (const w of words) count.set(w, (count.get(w) ?? 0) + 1);
  const seen = new Map<string, number>();
  return words.map((w) => {
    if (count.get(w) === 1) return w;
    const n = seen.get(w) ?? 0;
    seen.set(w, n + 1);
    return `${w}${QUALIFIER_SEPARATOR}${n}`;
  });
}

/** One sensor channel of a chip, as its directory listing and small attribute files describe it. */
export interface Channel {
  /** The value file, `power2_input`. */
  file: string;
  /** `power2`. */
  channel: string;
  kind: SensorKind;
  label?: string;
  /** Why it is not read (its `_enable` file says 0); undefined for a channel that is read. */
  disabled?: string;
}

/**
 * Chips whose `<prefix>N_enable` is not the hwmon ABI's sensor switch: amdgpu's `fan1_enable` says
 * whether the fan is under manual control (0 = automatic; amdgpu_pm.c,
 * amdgpu_hwmon_get_fan1_enable) and its `fan1_input` reads the speed either way.
 */
const ENABLE_IS_NOT_A_SWITCH: ReadonlyMap<string, readonly string[]> = new Map([['amdgpu', ['fan']]]);

/** Whether a `_enable` file of 0 switches this chip's channel of this kind off. */
export function enableSwitchesOff(chip: string | undefined, prefix: string): boolean {
  return !(ENABLE_IS_NOT_A_SWITCH.get(chip?.trim() ?? '') ?? []).includes(prefix);
}

/**
 * The channels joulegate reads in one chip's listing. `texts` holds the contents of the chip's
 * `*_label` and `*_enable` files by file name; one it lacks counts as absent. `chip` (its `name`)
 * says how to take `_enable` files (see enableSwitchesOff).
 */
export function parseChannels(
  files: readonly string[],
  texts: ReadonlyMap<string, string>,
  chip?: string,
): Channel[] {
  const channels: Channel[] = [];
  for (const file of files) {
    const parsed = parseSensorFile(file);
    if (!parsed) continue;
    const label = texts.get(`${parsed.channel}_label`)?.trim();
    const enable = enableSwitchesOff(chip, parsed.kind.prefix)
      ? texts.get(`${parsed.channel}_enable`)?.trim()
      : undefined;
    channels.push({
      file,
      ...parsed,
      ...(label ? { label } : {}),
      ...(enable === '0' ? { disabled: `${parsed.channel}_enable is 0 (channel switched off)` } : {}),
    });
  }
  return channels;
}

/** One signal of a chip: a channel, or the sum of the channels that share a label. */
export interface NamedSensor<C extends Channel = Channel> {
  /** Signal name without `HWMON::`. */
  name: string;
  kind: SensorKind;
  channels: C[];
}

function signalName(chipWord: string, middle: string, kind: SensorKind): string {
  return `${chipWord}_${middle}_${kind.quantity}`;
}

function middleWord(label: string | undefined, channel: string): string {
  return label && nameWord(label) !== '' ? nameWord(label) : nameWord(channel);
}

/** Signal name (without HWMON::) for one sensor: chip, label (or channel), quantity. */
export function sensorSignalName(
  chipWord: string,
  label: string | undefined,
  channel: string,
  kind: SensorKind,
): string {
  return signalName(chipWord, middleWord(label, channel), kind);
}

/**
 * Names a chip's channels: `CHIP_LABEL_QTY`, or `CHIP_CHANNEL_QTY` without a label. Channels whose
 * names would coincide (two rails labelled alike) are each `CHIP_LABEL__CHANNEL_QTY`, and for
 * power and energy the shared name reads their sum, so no channel hides another.
 */
export function nameSensors<C extends Channel>(chipWord: string, channels: readonly C[]): NamedSensor<C>[] {
  const byName = new Map<string, C[]>();
  for (const c of channels) {
    const name = sensorSignalName(chipWord, c.label, c.channel, c.kind);
    byName.set(name, [...(byName.get(name) ?? []), c]);
  }
  const named: NamedSensor<C>[] = [];
  for (const [name, group] of byName) {
    const kind = group[0]!.kind;
    if (group.length === 1) {
      named.push({ name, kind, channels: group });
      continue;
    }
    for (const c of group) {
      const middle = `${middleWord(c.label, c.channel)}${QUALIFIER_SEPARATOR}${nameWord(c.channel)}`;
      named.push({ name: signalName(chipWord, middle, c.kind), kind: c.kind, channels: [c] });
    }
    if (group.every((c) => c.kind === kind && kind.summable)) named.push({ name, kind, channels: group });
  }
  return named;
}

/** Physical package named by a coretemp label: "Package id 1", or "Physical id 1" before Linux 3.x. */
export function packageFromLabel(label: string): number | undefined {
  const m = /^(?:Package|Physical) id (\d+)$/i.exec(label.trim());
  return m ? Number(m[1]) : undefined;
}

/** The catalogue alias a per-package chip's package temperature is offered under. */
export const PACKAGE_TEMPERATURE_ALIAS = 'CPU_PACKAGE_TEMPERATURE';

/**
 * The channel that is the temperature of the whole package on a per-package chip: coretemp's
 * "Package id N" ("Physical id N"), else k10temp's/zenpower's "Tdie" (the die's own reading),
 * else their "Tctl" (the control value, which some models offset; still what the CPU throttles by).
 */
export function packageTemperatureChannel<C extends Channel>(channels: readonly C[]): C | undefined {
  const temps = channels.filter((c) => c.kind.prefix === 'temp' && c.disabled === undefined);
  const labelled = (test: (label: string) => boolean) => temps.find((c) => test(c.label?.trim() ?? ''));
  return (
    labelled((l) => packageFromLabel(l) !== undefined) ??
    labelled((l) => /^tdie$/i.test(l)) ??
    labelled((l) => /^tctl$/i.test(l))
  );
}

/**
 * Dense package indices of same-named per-package chips given in device order, each with the
 * physical package its label names, if any. Labels decide when they name distinct packages of
 * this machine (some firmware labels every socket "Physical id 0"); otherwise device order does.
 * A chip beyond the machine's packages gets undefined (it is read as a board chip).
 */
export function assignPackages(
  labelled: readonly (number | undefined)[],
  packageIndex: ReadonlyMap<number, number>,
): (number | undefined)[] {
  const fromLabels = labelled.map((p) => (p === undefined ? undefined : packageIndex.get(p)));
  const distinct = new Set(fromLabels);
  if (!distinct.has(undefined) && distinct.size === fromLabels.length) return fromLabels;
  return labelled.map((_, ordinal) => (ordinal < packageIndex.size ? ordinal : undefined));
}

/** `thermal_zone3` → 3; undefined for other entries of /sys/class/thermal (cooling devices). */
export function parseZoneEntry(entry: string): number | undefined {
  const m = /^thermal_zone(\d+)$/.exec(entry);
  return m ? Number(m[1]) : undefined;
}

/**
 * Signal names of thermal zones given in zone-number order: `THERMAL__<TYPE>_TEMP` (no hwmon chip
 * word starts so), `THERMAL__<TYPE>__<n>_TEMP` when several zones share a type.
 */
export function thermalZoneSignalNames(types: readonly string[]): string[] {
  const words = types.map((t) => `THERMAL${QUALIFIER_SEPARATOR}${nameWord(t) || 'ZONE'}`);
  return indexedWords(words).map((w) => `${w}_${THERMAL_ZONE_KIND.quantity}`);
}
