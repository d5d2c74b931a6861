import type { Backend, Diagnostic } from './backend.js';
import { DomainType, domainName } from './domains.js';
import type { PlatformIO } from './platform-io.js';
import {
  type CatalogueEntry,
  entryNamed,
  entryOfAlias,
  SENSOR_DEVICE_OF_GROUP,
  type SensorDevice,
  SIGNAL_CATALOGUE,
  type SignalCatalogue,
} from './signal-catalogue.js';
import { type SignalInfo, UNITS_SYMBOLS, Units } from './signal-info.js';
import type { Topology } from './topology.js';

/** perun's device classes. */
export type DeviceType = SensorDevice;

/** perun's availability tuple: [backend id, device type, unit]. */
export type SensorAvailability = [backendId: string, device: DeviceType, unit: string];

export interface Sensor {
  id: string;
  backendId: string;
  signal: string;
  domain: DomainType;
  index: number;
  device: DeviceType;
  unit: string;
  info: SignalInfo;
  read(): Promise<number>;
}

/** Device class of a signal no catalogue row knows, from its domain. */
const DEVICE_OF_DOMAIN: Partial<Record<DomainType, DeviceType>> = {
  [DomainType.Gpu]: 'gpu',
  [DomainType.GpuChip]: 'gpu',
  [DomainType.Package]: 'cpu',
  [DomainType.Core]: 'cpu',
  [DomainType.Cpu]: 'cpu',
  [DomainType.Board]: 'node',
};

/** What `catalogueEntries` needs of a backend: its names, and each one's links. */
export interface SignalLinks {
  signalNames(): string[];
  signalInfo(name: string): Pick<SignalInfo, 'aliasFor' | 'feeds'>;
}

/**
 * The catalogue rows a backend's signals feed. A signal feeds the row its backend names
 * (`feeds`), else the row one of whose names it is (as the monitor finds it), else the row of an
 * alias the backend resolves to it, else, being an alias itself, the row of the name it stands for.
 */
export function catalogueEntries(
  backend: SignalLinks,
  catalogue: SignalCatalogue = SIGNAL_CATALOGUE,
): (signal: string) => CatalogueEntry | undefined {
  const names = new Set(backend.signalNames());
  const aliasesOf = new Map<string, string[]>();
  for (const name of names) {
    const target = backend.signalInfo(name).aliasFor;
    if (target !== undefined) aliasesOf.set(target, [...(aliasesOf.get(target) ?? []), name]);
  }
  const entryOf = (signal: string, seen: ReadonlySet<string>): CatalogueEntry | undefined => {
    if (seen.has(signal) || !names.has(signal)) return undefined;
    const info = backend.signalInfo(signal);
    if (info.feeds !== undefined) return entryOfAlias(info.feeds, catalogue);
    const entry =
      entryNamed(signal, catalogue) ??
      (aliasesOf.get(signal) ?? []).map((alias) => entryNamed(alias, catalogue)).find((e) => e);
    if (entry || info.aliasFor === undefined) return entry;
    return entryOf(info.aliasFor, new Set([...seen, signal]));
  };
  return (signal) => entryOf(signal, new Set());
}

/**
 * A PlatformIO's signals' catalogue rows, each as the backend serving it gives it (aliases and
 * `feeds` are a backend's own links, which PlatformIO's merged names lose). Built once per backend.
 */
export function platformCatalogueEntries(
  pio: PlatformIO,
  catalogue: SignalCatalogue = SIGNAL_CATALOGUE,
): (signal: string) => CatalogueEntry | undefined {
  const perBackend = new Map<Backend, (signal: string) => CatalogueEntry | undefined>();
  return (signal) => {
    const backend = pio.signalBackend(signal);
    if (!backend) return undefined;
    let entryOf = perBackend.get(backend);
    if (!entryOf) {
      entryOf = catalogueEntries(backend, catalogue);
      perBackend.set(backend, entryOf);
    }
    return entryOf(signal);
  };
}

function deviceOf(entry: CatalogueEntry | undefined, info: SignalInfo): DeviceType {
  if (entry) return SENSOR_DEVICE_OF_GROUP[entry.group];
  return DEVICE_OF_DOMAIN[info.domain] ?? 'other';
}

/** Device class of a backend's signal: its catalogue row's group, else its domain's. */
export function deviceTypeOf(
  backend: Backend,
  signal: string,
  catalogue: SignalCatalogue = SIGNAL_CATALOGUE,
): DeviceType {
  return deviceOf(catalogueEntries(backend, catalogue)(signal), backend.signalInfo(signal));
}

/** Sensor id for one signal at one index, in geopmsession's header style (`NAME-domain-idx`). */
export function sensorId(signal: string, domain: DomainType, idx: number): string {
  return domain === DomainType.Board ? signal : `${signal}-${domainName(domain)}-${idx}`;
}

function sensorsOf(backend: Backend, topology: Topology, catalogue: SignalCatalogue): Sensor[] {
  const out: Sensor[] = [];
  const entryOf = catalogueEntries(backend, catalogue);
  // Low-level names only: aliases would list the same hardware twice.
  for (const signal of backend.signalNames().filter((s) => s.includes('::'))) {
    const info = backend.signalInfo(signal);
    const device = deviceOf(entryOf(signal), info);
    const n = topology.numDomain(info.domain);
    for (let idx = 0; idx < n; idx++) {
      if (backend.isSignalAvailable && !backend.isSignalAvailable(signal, idx)) continue;
      out.push({
        id: sensorId(signal, info.domain, idx),
        backendId: backend.id,
        signal,
        domain: info.domain,
        index: idx,
        device,
        unit: info.units === Units.None ? '' : UNITS_SYMBOLS[info.units]!,
        info,
        read: () => backend.readSignal(signal, info.domain, idx),
      });
    }
  }
  return out;
}

/** perun's `availableSensors()`, derived from any backend's signal catalogue. */
export function availableSensors(
  backend: Backend,
  topology: Topology,
  catalogue: SignalCatalogue = SIGNAL_CATALOGUE,
): Record<string, SensorAvailability> {
  const out: Record<string, SensorAvailability> = {};
  for (const s of sensorsOf(backend, topology, catalogue)) out[s.id] = [s.backendId, s.device, s.unit];
  return out;
}

/**
 * The indices of its domain where a backend's signal does not exist (a package without a chip),
 * with the backend's reason: one diagnostic per place and reason, naming the signals it costs.
 */
export function unavailableSensors(backend: Backend, topology: Topology): Diagnostic[] {
  const byPlace = new Map<string, { where: string; reason: string; signals: string[] }>();
  for (const signal of backend.signalNames().filter((s) => s.includes('::'))) {
    if (!backend.isSignalAvailable) break;
    const { domain } = backend.signalInfo(signal);
    for (let idx = 0; idx < topology.numDomain(domain); idx++) {
      if (backend.isSignalAvailable(signal, idx)) continue;
      const where = `${domainName(domain)} ${idx}`;
      const reason = backend.whyUnavailable?.(signal, idx) ?? 'not present';
      const key = `${where}\0${reason}`;
      const place = byPlace.get(key) ?? { where, reason, signals: [] };
      place.signals.push(signal);
      byPlace.set(key, place);
    }
  }
  return [...byPlace.values()].map(({ where, reason, signals }) => ({
    backend: backend.name,
    signal: `${signals.length === 1 ? signals[0] : `${signals.length} signals (${signals.join(', ')})`} at ${where}`,
    reason,
  }));
}

/** perun's `getSensors(ids)`: the sensors whose ids are listed, each with `read()`. */
export function getSensors(
  backend: Backend,
  topology: Topology,
  ids: Iterable<string>,
  catalogue: SignalCatalogue = SIGNAL_CATALOGUE,
): Sensor[] {
  const wanted = new Set(ids);
  return sensorsOf(backend, topology, catalogue).filter((s) => wanted.has(s.id));
}
