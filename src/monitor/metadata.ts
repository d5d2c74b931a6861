import { hostname, type as osType, release, totalmem } from 'node:os';
import { DomainType } from '../platform/domains.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { Sysroot } from '../platform/sysroot.js';
import { VERSION } from '../platform/version.js';

/**
 * The CPUs of the node PlatformIO describes (under JOULEGATE_SYSROOT where one is set): the
 * model name from the CPUINFO backend's /proc/cpuinfo, the count from the topology.
 */
export function hostCpus(pio: PlatformIO): { model: string | undefined; count: number } {
  const cpuinfo = pio.loadedBackends().find((b) => b.name === 'CPUINFO');
  const model = cpuinfo?.metadata().model_name;
  return {
    model: typeof model === 'string' ? model.trim() : undefined,
    count: pio.topology.numDomain(DomainType.Cpu),
  };
}

interface HostFacts {
  hostname: string;
  os: string;
  kernel: string;
  /** Bytes, as text; "unknown" where the sysroot lacks /proc/meminfo. */
  totalRam: string;
}

/**
 * Name, kernel and memory of the node PlatformIO describes: this host, or under a sysroot the
 * sysroot's /proc (and /etc/hostname). A fact the sysroot lacks is "unknown", never this host's.
 */
export function hostFacts(sysroot = new Sysroot()): HostFacts {
  if (sysroot.prefix === '')
    return { hostname: hostname(), os: osType(), kernel: release(), totalRam: String(totalmem()) };
  const read = (path: string) => {
    try {
      return sysroot.readText(path).trim() || undefined;
    } catch {
      return undefined;
    }
  };
  const memKb = /^MemTotal:\s*(\d+)\s*kB/m.exec(read('/proc/meminfo') ?? '')?.[1];
  return {
    hostname: read('/proc/sys/kernel/hostname') ?? read('/etc/hostname') ?? 'unknown',
    os: read('/proc/sys/kernel/ostype') ?? 'unknown',
    kernel: read('/proc/sys/kernel/osrelease') ?? 'unknown',
    totalRam: memKb === undefined ? 'unknown' : String(Number(memKb) * 1024),
  };
}

/** Host facts for reports and `joulegate metadata`: strings only (HDF5 attributes). */
export function collectMetadata(pio: PlatformIO): Record<string, string> {
  const cpus = hostCpus(pio);
  const host = hostFacts();
  return {
    joulegate_version: VERSION,
    hostname: host.hostname,
    platform: `${host.os} ${host.kernel}`,
    kernel: host.kernel,
    node: process.version,
    processor: cpus.model ?? 'unknown',
    core_count: String(cpus.count),
    total_ram_byte: host.totalRam,
    backends: pio
      .loadedBackends()
      .map((b) => b.name)
      .join(','),
    gpu_count: String(pio.topology.numDomain(DomainType.Gpu)),
  };
}
