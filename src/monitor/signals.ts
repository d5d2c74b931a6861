import { DomainType, domainName } from '../platform/domains.js';
import { JoulegateError } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { sensorId } from '../platform/sensors.js';
import {
  type DeviceGroup,
  isNamed,
  KIND_UNITS,
  namesOf,
  type SeriesKind,
  type SeriesSpec,
  SIGNAL_CATALOGUE,
  type SignalCatalogue,
  sampledEntries,
} from '../platform/signal-catalogue.js';
import { UNITS_NAMES } from '../platform/signal-info.js';
import { PERUN_BACKEND_NAMES, PERUN_BACKENDS, perunSensorIds } from './perun-names.js';

export {
  DEVICE_GROUPS,
  type DeviceGroup,
  type EnergyMethod,
  type SeriesKind,
  type SeriesSpec,
} from '../platform/signal-catalogue.js';

export interface SelectionFilters {
  includeSensors: RegExp[];
  excludeSensors: RegExp[];
  includeBackends: RegExp[];
  excludeBackends: RegExp[];
}

export const NO_FILTERS: SelectionFilters = {
  includeSensors: [],
  excludeSensors: [],
  includeBackends: [],
  excludeBackends: [],
};

/**
 * perun's rule: prefix match (`re.match`); exclude wins over include. A pattern may name the
 * thing in joulegate's words or perun's (`names`); each pattern that matched is added to `used`.
 */
function passes(names: readonly string[], include: RegExp[], exclude: RegExp[], used: Set<RegExp>): boolean {
  const matches = (re: RegExp) => names.some((n) => re.exec(n)?.index === 0);
  for (const re of [...include, ...exclude]) if (matches(re)) used.add(re);
  if (exclude.length > 0) return !exclude.some(matches);
  return include.length === 0 || include.some(matches);
}

/**
 * First candidate PlatformIO offers: as a high-level alias (`CPU_ENERGY`) or else as any
 * backend's low-level name with that suffix (`PROCFS::MEMORY_USED`).
 */
function resolveName(candidates: readonly string[], all: readonly string[]): string | undefined {
  for (const c of candidates) {
    const found = all.find((n) => n === c) ?? all.find((n) => isNamed(n, c));
    if (found) return found;
  }
  return undefined;
}

export interface Selection {
  series: SeriesSpec[];
  /** Why something expected was not selected (filtered out, wrong units, absent at an index). */
  notes: string[];
  /** Filter patterns that matched no backend or sensor the catalogue looked at here. */
  unmatched: RegExp[];
}

/**
 * Picks the series to sample from whatever PlatformIO offers, by name, units and domain: the
 * catalogue's rows of the kinds the report has maths for. Power rows are used only for groups
 * without an energy counter: a counter is exact, integrated power is not.
 */
export function selectSeries(
  pio: PlatformIO,
  filters: SelectionFilters = NO_FILTERS,
  catalogue: SignalCatalogue = SIGNAL_CATALOGUE,
): Selection {
  const series: SeriesSpec[] = [];
  const notes: string[] = [];
  const energyGroups = new Set<DeviceGroup>();
  const all = pio.signalNames();
  const used = new Set<RegExp>();
  const cpuCount = pio.topology.numDomain(DomainType.Cpu);
  for (const rule of sampledEntries(catalogue)) {
    if (rule.kind === 'power' && energyGroups.has(rule.group)) continue;
    const name = resolveName(namesOf(rule), all);
    if (!name) continue;
    const info = pio.signalInfo(name);
    const units = KIND_UNITS[rule.kind];
    if (units !== undefined && info.units !== units) {
      notes.push(`${name}: skipped, units are not ${UNITS_NAMES[units]}`);
      continue;
    }
    const backendNames = [info.backend, ...(PERUN_BACKEND_NAMES[info.backend] ?? [])];
    if (!passes(backendNames, filters.includeBackends, filters.excludeBackends, used)) {
      notes.push(`${name}: backend ${info.backend} filtered out by configuration`);
      continue;
    }
    const domain = rule.perDevice ? info.domain : DomainType.Board;
    const count = domain === DomainType.Board ? 1 : pio.topology.numDomain(domain);
    let added = 0;
    for (let index = 0; index < count; index++) {
      const id = sensorId(name, domain, index);
      const shape = { kind: rule.kind, group: rule.group, index, direction: rule.direction };
      const sensorNames = [id, ...perunSensorIds(shape, cpuCount)];
      if (!passes(sensorNames, filters.includeSensors, filters.excludeSensors, used)) {
        notes.push(`${id}: filtered out by configuration`);
        continue;
      }
      const missing = pio.whyUnavailable(name, domain, index);
      if (missing !== undefined) {
        notes.push(`${name} ${domainName(domain)} ${index}: ${missing}`);
        continue;
      }
      series.push({
        id,
        signal: name,
        domain: domainName(domain),
        index,
        group: rule.group,
        kind: rule.kind,
        backend: info.backend,
        direction: rule.direction,
        ...(rule.outsidePlatform || info.outsidePlatform ? { outsidePlatform: true as const } : {}),
      });
      added++;
    }
    if (added > 0 && rule.kind === 'energy') energyGroups.add(rule.group);
  }
  const patterns = Object.values(filters).flat() as RegExp[];
  return { series, notes, unmatched: patterns.filter((re) => !used.has(re)) };
}

/** A signal's value in the unit the report stores for its kind: utilisation 0..1 → percent. */
export function storedValue(kind: SeriesKind, signalValue: number): number {
  return kind === 'util' ? signalValue * 100 : signalValue;
}

const KIND_WORDS: Record<SeriesKind, string> = {
  energy: 'energy',
  power: 'power',
  util: 'utilisation',
  memory: 'memory use',
  bytes: 'traffic',
};

/** What a series measures, in words: `CPU utilisation`, `GPU energy`. */
export function seriesLabel(s: SeriesSpec): string {
  const what = s.kind === 'bytes' && s.direction ? `${s.direction} traffic` : KIND_WORDS[s.kind];
  return `${s.group.toUpperCase()} ${what}`;
}

const FILTER_SETTINGS: Readonly<Record<keyof SelectionFilters, string>> = {
  includeSensors: 'include_sensors',
  excludeSensors: 'exclude_sensors',
  includeBackends: 'include_backends',
  excludeBackends: 'exclude_backends',
};

/**
 * What the `[monitor]` filters did, before any app runs: a backend pattern that names no
 * backend joulegate or perun has is an error (a typo); a sensor pattern that matches nothing
 * here is a warning (perun's sensor of a GPU this host lacks); filters that leave nothing to
 * sample are an error naming the sensors there are, in joulegate's and perun's words. Returns
 * the warnings.
 */
export function checkFilters(
  pio: PlatformIO,
  filters: SelectionFilters,
  selection: Selection,
  backendNames: readonly string[],
): string[] {
  const setting = (re: RegExp) =>
    FILTER_SETTINGS[
      (Object.keys(FILTER_SETTINGS) as (keyof SelectionFilters)[]).find((k) => filters[k].includes(re))!
    ];
  const known = [...backendNames, ...PERUN_BACKENDS];
  for (const re of [...filters.includeBackends, ...filters.excludeBackends])
    if (!known.some((n) => re.exec(n)?.index === 0))
      throw new JoulegateError(
        `[monitor] ${setting(re)}: "${re.source}" names no backend (joulegate's: ${backendNames.join(', ')}; ` +
          `perun's: ${PERUN_BACKENDS.join(', ')})`,
      );
  const warnings = selection.unmatched
    .filter((re) => filters.includeSensors.includes(re) || filters.excludeSensors.includes(re))
    .map((re) => `[monitor] ${setting(re)}: "${re.source}" matches no sensor on this host`);
  const filtered = Object.values(filters).some((list) => list.length > 0);
  if (filtered && selection.series.length === 0) {
    const cpuCount = pio.topology.numDomain(DomainType.Cpu);
    const here = selectSeries(pio).series.map((s) => {
      const perun = perunSensorIds(s, cpuCount);
      const shown = perun.length > 3 ? `${perun[0]}…${perun.at(-1)}` : perun.join(', ');
      return `${s.id} (${s.backend}${shown ? `; perun: ${shown}` : ''})`;
    });
    throw new JoulegateError(
      `[monitor] the include/exclude settings leave nothing to sample on this host; its sensors: ${
        here.join(', ') || 'none'
      }`,
    );
  }
  return warnings;
}
