import { cpus, hostname, type as osType, release, totalmem } from 'node:os';
import type { PlatformIO } from '../platform/platform-io.js';
import { VERSION } from '../platform/version.js';

/** Host facts for reports and `joulegate metadata`: strings only (HDF5 attributes). */
export function collectMetadata(pio?: PlatformIO): Record<string, string> {
  const cpu = cpus();
  const out: Record<string, string> = {
    joulegate_version: VERSION,
    hostname: hostname(),
    platform: `${osType()} ${release()}`,
    kernel: release(),
    node: process.version,
    processor: cpu[0]?.model.trim() ?? 'unknown',
    core_count: String(cpu.length),
    total_ram_byte: String(totalmem()),
  };
  if (pio) {
    out.backends = pio
      .loadedBackends()
      .map((b) => b.name)
      .join(',');
    out.gpu_count = String(pio.topology.numDomain(8));
  }
  return out;
}
