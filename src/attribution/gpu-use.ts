import { errorMessage } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import type { GpuUse } from './interval.js';
import type { GpuConsumer, GpuUseSource } from './meter.js';

/**
 * GPU use for attribution: NVML's per-process utilisation samples mapped to the consumers'
 * processes, or a whole GPU for the one consumer whose cgroup alone may open it (a job's GPU
 * binding, gpu-binding.ts).
 */

/** What the NVML backend offers for this (backends/nvml: gpuMinors, processUtilization). */
export interface ProcessUtilizationReader {
  /** `minor` undefined: the library cannot tell (a job's GPU binding then goes unrecognised). */
  gpuMinors(): { gpu: number; minor: number | undefined }[];
  processUtilization(gpu: number, sinceUs: bigint): { pid: number; timeStampUs: bigint; smUtil: number }[];
}

function isReader(b: object): b is ProcessUtilizationReader {
  return 'processUtilization' in b && 'gpuMinors' in b;
}

/** The loaded backend that gives per-process GPU utilisation, if any. */
export function processUtilizationReader(pio: PlatformIO): ProcessUtilizationReader | undefined {
  for (const b of pio.loadedBackends()) if (isReader(b)) return b;
  return undefined;
}

/** NVML per-process utilisation → GpuUse of each GPU for the interval just ended. */
export class NvmlGpuUse implements GpuUseSource {
  private readonly lastSeen = new Map<number, bigint>();
  private readonly minors: { gpu: number; minor: number | undefined }[];
  private readonly told = new Set<string>();

  constructor(
    private readonly reader: ProcessUtilizationReader,
    /** Told once per GPU and reason when its samples cannot be read. */
    private readonly onError?: (line: string) => void,
  ) {
    this.minors = reader.gpuMinors();
  }

  read(durationS: number, consumers: readonly GpuConsumer[]): GpuUse[] {
    const out: GpuUse[] = [];
    for (const { gpu, minor } of this.minors) {
      const owners = minor === undefined ? [] : consumers.filter((c) => c.gpus?.includes(minor));
      if (owners.length === 1) {
        out.push({ index: gpu, owner: owners[0]!.id, consumers: [] });
        continue;
      }
      const use = this.utilisation(gpu, durationS, consumers);
      if (use) out.push(use);
    }
    return out;
  }

  /** Utilisation·s per consumer (its processes' SM utilisation) and of every process on the GPU. */
  private utilisation(gpu: number, durationS: number, consumers: readonly GpuConsumer[]): GpuUse | undefined {
    let samples: ReturnType<ProcessUtilizationReader['processUtilization']>;
    try {
      samples = this.reader.processUtilization(gpu, this.lastSeen.get(gpu) ?? 0n);
    } catch (err) {
      const line = `GPU ${gpu}: per-process utilisation not read (${errorMessage(err)})`;
      if (!this.told.has(line)) this.onError?.(line);
      this.told.add(line);
      return undefined;
    }
    // One sample per process and sample period; several for a process are averaged.
    const perPid = new Map<number, { sum: number; n: number }>();
    for (const s of samples) {
      const p = perPid.get(s.pid) ?? { sum: 0, n: 0 };
      p.sum += s.smUtil;
      p.n++;
      perPid.set(s.pid, p);
      if (s.timeStampUs > (this.lastSeen.get(gpu) ?? 0n)) this.lastSeen.set(gpu, s.timeStampUs);
    }
    const seconds = (pid: number) => {
      const p = perPid.get(pid);
      return p === undefined ? 0 : (p.sum / p.n / 100) * durationS;
    };
    let device = 0;
    for (const pid of perPid.keys()) device += seconds(pid);
    return {
      index: gpu,
      deviceUtilSeconds: device,
      consumers: consumers.map((c) => ({
        id: c.id,
        // A consumer whose processes could not be read has unknown use, not none.
        utilSeconds: c.cpu.ok ? c.cpu.processes.reduce((sum, p) => sum + seconds(p.pid), 0) : Number.NaN,
      })),
    };
  }
}
