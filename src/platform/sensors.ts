import type { Backend } from './backend.js';
import { DomainType, domainName } from './domains.js';
import { type SignalInfo, UNITS_SYMBOLS, Units } from './signal-info.js';
import type { Topology } from './topology.js';

/** perun's device classes. */
export type DeviceType = 'node' | 'cpu' | 'gpu' | 'ram' | 'disk' | 'net' | 'other';

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

/** Device class of a signal, from its name and domain. */
export function deviceTypeOf(info: SignalInfo): DeviceType {
  const n = info.name.toUpperCase();
  if (info.domain === DomainType.Gpu || info.domain === DomainType.GpuChip || /(^|:)GPU_/.test(n))
    return 'gpu';
  if (/DRAM|MEMORY/.test(n)) return 'ram';
  if (/DISK/.test(n)) return 'disk';
  if (/NET_|NETWORK/.test(n)) return 'net';
  if (/BOARD|PSYS|PLATFORM/.test(n)) return 'node';
  if ([DomainType.Package, DomainType.Core, DomainType.Cpu].includes(info.domain) || /CPU/.test(n))
    return 'cpu';
  if (info.domain === DomainType.Board) return 'node';
  return 'other';
}

/** Sensor id for one signal at one index, in geopmsession's header style (`NAME-domain-idx`). */
export function sensorId(signal: string, domain: DomainType, idx: number): string {
  return domain === DomainType.Board ? signal : `${signal}-${domainName(domain)}-${idx}`;
}

function sensorsOf(backend: Backend, topology: Topology): Sensor[] {
  const out: Sensor[] = [];
  // Low-level names only: aliases would list the same hardware twice.
  for (const signal of backend.signalNames().filter((s) => s.includes('::'))) {
    const info = backend.signalInfo(signal);
    const n = topology.numDomain(info.domain);
    for (let idx = 0; idx < n; idx++) {
      if (backend.isSignalAvailable && !backend.isSignalAvailable(signal, idx)) continue;
      out.push({
        id: sensorId(signal, info.domain, idx),
        backendId: backend.id,
        signal,
        domain: info.domain,
        index: idx,
        device: deviceTypeOf(info),
        unit: info.units === Units.None ? '' : UNITS_SYMBOLS[info.units]!,
        info,
        read: () => backend.readSignal(signal, info.domain, idx),
      });
    }
  }
  return out;
}

/** perun's `availableSensors()`, derived from any backend's signal catalogue. */
export function availableSensors(backend: Backend, topology: Topology): Record<string, SensorAvailability> {
  const out: Record<string, SensorAvailability> = {};
  for (const s of sensorsOf(backend, topology)) out[s.id] = [s.backendId, s.device, s.unit];
  return out;
}

/** perun's `getSensors(ids)`: the sensors whose ids are listed, each with `read()`. */
export function getSensors(backend: Backend, topology: Topology, ids: Iterable<string>): Sensor[] {
  const wanted = new Set(ids);
  return sensorsOf(backend, topology).filter((s) => wanted.has(s.id));
}
