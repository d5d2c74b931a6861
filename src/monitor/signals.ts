import { DomainType, domainName } from '../platform/domains.js';
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

/** perun's rule: prefix match (`re.match`); exclude wins over include. */
function passes(value: string, include: RegExp[], exclude: RegExp[]): boolean {
  const matches = (re: RegExp) => re.exec(value)?.index === 0;
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
    if (!passes(info.backend, filters.includeBackends, filters.excludeBackends)) {
      notes.push(`${name}: backend ${info.backend} filtered out by configuration`);
      continue;
    }
    const domain = rule.perDevice ? info.domain : DomainType.Board;
    const count = domain === DomainType.Board ? 1 : pio.topology.numDomain(domain);
    let added = 0;
    for (let index = 0; index < count; index++) {
      const id = sensorId(name, domain, index);
      if (!passes(id, filters.includeSensors, filters.excludeSensors)) {
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
  return { series, notes };
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
