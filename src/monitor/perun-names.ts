import type { DeviceGroup, SeriesKind } from '../platform/signal-catalogue.js';

/*
 * perun's backend and sensor names (docs/reference/perun-files.md#backend-and-sensor-names), so
 * that perun's `include_backends`, `exclude_backends`, `include_sensors` and `exclude_sensors`
 * select the same hardware in joulegate. A filter pattern is tried against joulegate's name and
 * against perun's names of the same thing.
 */

/**
 * perun's names of the backends that read what each joulegate backend reads: its ids
 * (`powercap_rapl`, `psutil`, `nvlm`, `amdsmi`) and display names. RAPL through the MSRs is
 * RAPL as well; psutil gave perun utilisation, memory, I/O and clock frequencies.
 */
export const PERUN_BACKEND_NAMES: Readonly<Record<string, readonly string[]>> = {
  POWERCAP: ['powercap_rapl', 'Powercap RAPL', 'Intel RAPL', 'RAPL'],
  MSR: ['powercap_rapl', 'Powercap RAPL', 'Intel RAPL', 'RAPL'],
  PROCFS: ['psutil', 'PSUTIL'],
  CPUFREQ: ['psutil', 'PSUTIL'],
  NVML: ['nvlm', 'NVIDIA ML'],
  AMDSMI: ['amdsmi', 'AMD ROCM', 'rocm-smi'],
};

/** perun's backend names, each once, for messages. */
export const PERUN_BACKENDS: readonly string[] = [...new Set(Object.values(PERUN_BACKEND_NAMES).flat())];

/** What a sampled series is, as far as perun's sensor ids tell it apart. */
export interface SeriesShape {
  kind: SeriesKind;
  group: DeviceGroup;
  index: number;
  direction?: 'read' | 'write';
}

/**
 * perun's sensor ids for a series joulegate samples (`cpuCount`: logical CPUs, for perun's
 * per-CPU `CPU_USAGE_<n>`; joulegate samples utilisation host-wide, so each of them selects it).
 * GPUs: perun's NVML ids by index, and AMD's by index as perun's older ROCm backend named them.
 */
export function perunSensorIds(s: SeriesShape, cpuCount: number): string[] {
  const energyLike = s.kind === 'energy' || s.kind === 'power';
  if (s.group === 'cpu' && energyLike) return [`cpu_${s.index}_package-${s.index}`];
  if (s.group === 'ram' && energyLike) return [`ram_${s.index}_dram`];
  if (s.group === 'gpu' && energyLike) return [`CUDA:${s.index}_POWER`, `ROCM:${s.index}_POWER`];
  if (s.group === 'gpu' && s.kind === 'memory') return [`CUDA:${s.index}_MEM`, `ROCM:${s.index}_MEM`];
  if (s.group === 'cpu' && s.kind === 'util')
    return Array.from({ length: Math.max(1, cpuCount) }, (_, n) => `CPU_USAGE_${n}`);
  if (s.group === 'ram' && s.kind === 'memory') return ['RAM_USAGE'];
  if ((s.group === 'net' || s.group === 'disk') && s.kind === 'bytes' && s.direction)
    return [`${s.group.toUpperCase()}_${s.direction.toUpperCase()}_BYTES`];
  return [];
}
