import { hostname, type as osType, release, totalmem } from 'node:os';
import { DomainType } from '../platform/domains.js';
import type { PlatformIO } from '../platform/platform-io.js';
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

/** Host facts for reports and `joulegate metadata`: strings only (HDF5 attributes). */
export function collectMetadata(pio: PlatformIO): Record<string, string> {
  const cpus = hostCpus(pio);
  return {
    joulegate_version: VERSION,
    hostname: hostname(),
    platform: `${osType()} ${release()}`,
    kernel: release(),
    node: process.version,
    processor: cpus.model ?? 'unknown',
    core_count: String(cpus.count),
    total_ram_byte: String(totalmem()),
    backends: pio
      .loadedBackends()
      .map((b) => b.name)
      .join(','),
    gpu_count: String(pio.topology.numDomain(DomainType.Gpu)),
  };
}
