import { writeSync } from 'node:fs';
import { encodeRegionEvent, REGION_FD_ENV } from './channel.js';
import { clockMs } from './clock.js';
import { roundMetrics } from './metrics.js';
import type { RegionEvent, RegionSummary } from './model/report-model.js';
import { summarizeRegions } from './model/round-stats.js';

/**
 * Regions API for JS/TS apps: `measure(name, fn)` and `region(name)`.
 *
 * Under `joulegate monitor` each start/stop goes to the monitor through the inherited channel
 * (JOULEGATE_REGION_FD), stamped with the shared clock; the monitor's report holds the region
 * energy. Standalone, the first region starts an in-process sampler on the local backends and
 * `regionReport()` returns the region energy itself.
 */
export interface RegionHandle {
  readonly name: string;
  /** Ends the region; a second call does nothing. */
  end(): void;
}

interface Standalone {
  originMs: number;
  events: RegionEvent[];
  ready: Promise<StandaloneSampling | undefined>;
}

interface StandaloneSampling {
  stop(): Promise<{ metricsArgs: Parameters<typeof roundMetrics> }>;
  sampleNow(): Promise<void>;
}

let channelFd: number | undefined | null = null;
let standalone: Standalone | undefined;
/** Calls started by this process: with the pid, each call's id on the channel. */
let calls = 0;

function monitorChannel(): number | undefined {
  if (channelFd === null) {
    const fd = Number(process.env[REGION_FD_ENV]);
    channelFd = Number.isInteger(fd) && fd > 2 ? fd : undefined;
  }
  return channelFd;
}

function emit(kind: 'start' | 'stop', name: string, call: string): void {
  const t = clockMs();
  const fd = monitorChannel();
  if (fd !== undefined) {
    try {
      writeSync(fd, encodeRegionEvent(kind, t, name, call));
      return;
    } catch (err) {
      process.emitWarning(
        `joulegate: region channel fd ${fd} unusable (${(err as Error).message}); measuring in-process`,
      );
      channelFd = undefined;
    }
  }
  const s = startStandalone();
  s.events.push({ name, kind, t: (t - s.originMs) / 1000, call });
}

/** Starts the in-process sampler once: local backends, default period 0.1 s (JOULEGATE_SAMPLING_PERIOD). */
function startStandalone(): Standalone {
  if (standalone) return standalone;
  const originMs = clockMs();
  const s: Standalone = { originMs, events: [], ready: Promise.resolve(undefined) };
  s.ready = (async () => {
    const [{ openPlatform }, { Sampler, SamplingLoop }, { selectSeries }, { cpuEstimator }, { hostCpus }] =
      await Promise.all([
        import('../backends/open-platform.js'),
        import('./sampler.js'),
        import('./signals.js'),
        import('../platform/cpu-estimate.js'),
        import('./metadata.js'),
      ]);
    const pio = await openPlatform();
    const cpus = hostCpus(pio);
    const estimator = cpuEstimator({ tdp: 0, threads: 0 }, cpus.model, cpus.count);
    const series = selectSeries(pio).series;
    const sampler = new Sampler(pio, series);
    const data = { originMs, times: [] as number[], values: series.map(() => [] as number[]) };
    const period = Number(process.env.JOULEGATE_SAMPLING_PERIOD ?? '0.1');
    const loop = new SamplingLoop(sampler, data, Math.max(10, period * 1000));
    await loop.start();
    return {
      sampleNow: () => sampler.read(data),
      async stop() {
        await loop.stop();
        await pio.close();
        const runtime = (clockMs() - originMs) / 1000;
        const post = { powerOverhead: 0, pue: 1, emissionsFactor: 0, priceFactor: 0 };
        return { metricsArgs: [series, data, runtime, s.events, post, estimator] };
      },
    };
  })();
  standalone = s;
  return s;
}

/** Marks the start of a region; call `end()` on the result. Nested and repeated regions are fine. */
export function region(name: string): RegionHandle {
  if (typeof name !== 'string' || name === '') throw new TypeError('region name must be a non-empty string');
  const call = `${process.pid}.${++calls}`;
  emit('start', name, call);
  let open = true;
  return {
    name,
    end() {
      if (!open) return;
      open = false;
      emit('stop', name, call);
    },
  };
}

/**
 * Runs `fn` (sync or async) as region `name` and returns its result; the region ends when the
 * result settles, also when it throws. Standalone, a sample is taken at both edges so counters
 * give the region's energy exactly.
 */
export async function measure<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
  const edge = async () => {
    if (monitorChannel() === undefined) await (await startStandalone().ready)?.sampleNow();
  };
  await edge();
  const r = region(name);
  try {
    return await fn();
  } finally {
    r.end();
    await edge();
  }
}

/**
 * Standalone only: stops the in-process sampler and returns per-region statistics (runtime,
 * energy, power; estimatedEnergy where only an estimate exists). Under `joulegate monitor` the
 * monitor reports regions and this returns undefined.
 */
export async function regionReport(): Promise<RegionSummary[] | undefined> {
  if (!standalone) return monitorChannel() === undefined ? [] : undefined;
  const s = standalone;
  standalone = undefined;
  const sampling = await s.ready;
  if (!sampling) return undefined;
  const { metricsArgs } = await sampling.stop();
  return summarizeRegions([roundMetrics(...metricsArgs)]);
}
