import { DomainType, domainName } from '../platform/domains.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { sensorId } from '../platform/sensors.js';
import type { DeviceGroup, SeriesKind, SeriesSpec } from '../platform/signal-catalogue.js';
import { Units } from '../platform/signal-info.js';

export {
  DEVICE_GROUPS,
  type DeviceGroup,
  type EnergyMethod,
  type SeriesKind,
  type SeriesSpec,
} from '../platform/signal-catalogue.js';

interface SignalRule {
  /** Candidate high-level names; the first one PlatformIO offers is used. */
  names: string[];
  group: DeviceGroup;
  kind: SeriesKind;
  /** Units the signal must declare (skips a same-named signal of another meaning). */
  units?: Units;
  /** Read at each native index (per device) or once for the whole board. */
  perDevice: boolean;
  direction?: 'read' | 'write';
  /** Outside the CPU platform whatever the backend says (discrete GPUs). */
  outsidePlatform?: true;
}

// The table of what the monitor samples. Power rules are used only for groups without an
// energy counter (see selectSeries): a counter is exact, integrated power is not.
const RULES: readonly SignalRule[] = [
  { names: ['CPU_ENERGY'], group: 'cpu', kind: 'energy', units: Units.Joules, perDevice: true },
  { names: ['DRAM_ENERGY'], group: 'ram', kind: 'energy', units: Units.Joules, perDevice: true },
  {
    names: ['GPU_ENERGY'],
    group: 'gpu',
    kind: 'energy',
    units: Units.Joules,
    perDevice: true,
    outsidePlatform: true,
  },
  { names: ['BOARD_ENERGY'], group: 'board', kind: 'energy', units: Units.Joules, perDevice: true },
  { names: ['CPU_POWER'], group: 'cpu', kind: 'power', units: Units.Watts, perDevice: true },
  { names: ['DRAM_POWER'], group: 'ram', kind: 'power', units: Units.Watts, perDevice: true },
  {
    names: ['GPU_POWER'],
    group: 'gpu',
    kind: 'power',
    units: Units.Watts,
    perDevice: true,
    outsidePlatform: true,
  },
  { names: ['BOARD_POWER'], group: 'board', kind: 'power', units: Units.Watts, perDevice: true },
  { names: ['CPU_UTILIZATION'], group: 'cpu', kind: 'util', perDevice: false },
  { names: ['GPU_UTILIZATION'], group: 'gpu', kind: 'util', perDevice: true },
  { names: ['GPU_MEMORY_USED'], group: 'gpu', kind: 'memory', perDevice: true },
  { names: ['MEMORY_USED', 'RAM_USED', 'MEM_USED'], group: 'ram', kind: 'memory', perDevice: false },
  { names: ['DISK_READ_BYTES'], group: 'disk', kind: 'bytes', perDevice: false, direction: 'read' },
  { names: ['DISK_WRITE_BYTES'], group: 'disk', kind: 'bytes', perDevice: false, direction: 'write' },
  {
    names: ['NET_READ_BYTES', 'NET_RX_BYTES'],
    group: 'net',
    kind: 'bytes',
    perDevice: false,
    direction: 'read',
  },
  {
    names: ['NET_WRITE_BYTES', 'NET_TX_BYTES'],
    group: 'net',
    kind: 'bytes',
    perDevice: false,
    direction: 'write',
  },
];

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
    const found = all.find((n) => n === c) ?? all.find((n) => n.endsWith(`::${c}`));
    if (found) return found;
  }
  return undefined;
}

export interface Selection {
  series: SeriesSpec[];
  /** Why something expected was not selected (filtered out, wrong units). */
  notes: string[];
}

/** Picks the series to sample from whatever PlatformIO offers, by name, units and domain. */
export function selectSeries(pio: PlatformIO, filters: SelectionFilters = NO_FILTERS): Selection {
  const series: SeriesSpec[] = [];
  const notes: string[] = [];
  const energyGroups = new Set<DeviceGroup>();
  const all = pio.signalNames();
  for (const rule of RULES) {
    if (rule.kind === 'power' && energyGroups.has(rule.group)) continue;
    const name = resolveName(rule.names, all);
    if (!name) continue;
    const info = pio.signalInfo(name);
    if (rule.units !== undefined && info.units !== rule.units) {
      notes.push(`${name}: skipped, units are not ${rule.kind === 'energy' ? 'joules' : 'watts'}`);
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
