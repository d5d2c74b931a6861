import type { Estimator } from '../platform/cpu-estimate.js';
import { errorMessage } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import type { SampleSet } from '../platform/sample-set.js';
import type { SeriesSpec } from '../platform/signal-catalogue.js';
import type { Sysroot } from '../platform/sysroot.js';
import type { Topology } from '../platform/topology.js';
import { type Consumer, openConsumer, renamed } from './consumers.js';
import type { DeviceRef, IdlePolicy } from './engine.js';
import { NvmlGpuUse, processUtilizationReader } from './gpu-use.js';
import { kernelClockTicks } from './kernel-files.js';
import {
  type AttributedGroup,
  AttributionMeter,
  type EnergySource,
  energySources,
  type GpuUseSource,
} from './meter.js';
import { type AttributionReport, attributionReport } from './summary.js';
import type { AttributionTotals } from './totals.js';

/** What `monitor --attribute` was asked for. */
export interface AttributionSetup {
  idleShare: IdlePolicy;
  /** The other consumers to report next to the app (opened by the caller: errors come first). */
  consumers: readonly Consumer[];
  /** Where /proc and cgroup files are read. */
  root: Sysroot;
  /** Idle power of the CPU packages, W: one for all or one per package; none: no idle model. */
  cpuIdleW?: readonly number[];
  gpu?: GpuUseSource;
}

/** The idle model of the CPU packages from one value for all or one per package. */
export function cpuIdlePower(watts: readonly number[] | undefined): (d: DeviceRef) => number | undefined {
  return (d) => (d.kind !== 'package' || !watts ? undefined : watts.length === 1 ? watts[0] : watts[d.index]);
}

/** GPU use from NVML's per-process samples where an NVML backend is loaded. */
export function gpuUseOf(pio: PlatformIO, onError: (line: string) => void): GpuUseSource | undefined {
  const reader = processUtilizationReader(pio);
  return reader && new NvmlGpuUse(reader, onError);
}

/** The app's consumer id inside the engine (its pid changes every round). */
export const APP_ID = 'app';

/** The sampler side the monitor drives: anything that fills a SampleSet. */
export interface SampleReader {
  read(into: SampleSet): Promise<void>;
}

/**
 * `monitor --attribute` across rounds: one meter per round (the app is a new process tree each
 * time), the measured rounds' shares summed into run totals, warm-up rounds left out.
 */
export class RunAttribution {
  private readonly sources: EnergySource[];
  private readonly totals = new Map<AttributedGroup, AttributionTotals>();
  private readonly notes = new Set<string>();
  private readonly usPerTick = 1e6 / kernelClockTicks();
  private readonly topology: Topology;
  private readonly gpu: GpuUseSource | undefined;

  constructor(
    private readonly setup: AttributionSetup,
    series: readonly SeriesSpec[],
    pio: PlatformIO,
    estimator: Estimator | undefined,
  ) {
    this.sources = energySources(series, estimator);
    this.topology = pio.topology;
    this.gpu = setup.gpu ?? gpuUseOf(pio, (line) => this.notes.add(line));
  }

  /** A meter for one round; a warm-up round's shares are not kept. */
  roundMeter(warmup: boolean): AttributionMeter {
    return new AttributionMeter({
      sources: this.sources,
      root: this.setup.root,
      consumers: this.setup.consumers,
      gpu: this.gpu,
      totals: warmup ? undefined : this.totals,
      context: {
        topology: this.topology,
        usPerTick: this.usPerTick,
        idlePolicy: this.setup.idleShare,
        idlePowerW: cpuIdlePower(this.setup.cpuIdleW),
      },
    });
  }

  /** Reads the samples, then the meter: every sample is also an attribution reading. */
  reader(sampler: SampleReader, meter: AttributionMeter, warn: (line: string) => void): SampleReader {
    let warned = false;
    return {
      read: async (into) => {
        await sampler.read(into);
        try {
          meter.record(
            into.times.at(-1)!,
            into.values.map((v) => v.at(-1)!),
          );
        } catch (err) {
          if (!warned) warn(`attribution: ${errorMessage(err)}`);
          warned = true;
        }
        for (const n of meter.notes) this.notes.add(n);
      },
    };
  }

  /** Makes the started app (its process tree) a consumer of the round's meter. */
  addApp(meter: AttributionMeter, pid: number): void {
    try {
      meter.addConsumer(renamed(openConsumer({ kind: 'pid-tree', pid }, this.setup.root), APP_ID));
    } catch (err) {
      this.notes.add(`the app (pid ${pid}) could not be followed: ${errorMessage(err)}`);
    }
  }

  report(): AttributionReport {
    if (this.sources.length === 0)
      this.notes.add('no CPU, RAM or GPU energy source was sampled: there was nothing to attribute');
    return attributionReport(
      this.totals,
      this.sources,
      {
        idleShare: this.setup.idleShare,
        app: 'process tree of the app',
        appId: APP_ID,
        consumers: this.setup.consumers.map((c) => c.id),
      },
      this.notes,
    );
  }
}
