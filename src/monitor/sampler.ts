import { cpus } from 'node:os';
import { parseDomain } from '../platform/domains.js';
import { errorMessage } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { clockMs } from './clock.js';
import type { SeriesSpec } from './signals.js';

/** Samples of one run: timestamps (s since `originMs`) and one value array per series. */
export interface SampleSet {
  originMs: number;
  times: number[];
  values: number[][];
}

/**
 * Reads a fixed set of series through PlatformIO's batch interface. A failed read is NaN, never
 * 0, and the first failure of each series is kept as a diagnostic.
 */
export class Sampler {
  readonly errors = new Map<string, string>();
  private handles: number[] = [];
  private cpuTimes: { busy: number; total: number } | undefined;
  private reads = 0;

  constructor(
    private readonly pio: PlatformIO,
    readonly series: SeriesSpec[],
    /** Adds an `os.cpus()` utilisation series when no backend offers CPU_UTILIZATION. */
    private readonly hostCpuSeries = -1,
    /** Told of the first failed read of each series, when it happens. */
    private readonly onFirstFailure?: (id: string, reason: string) => void,
  ) {
    this.handles = series.map((s, i) =>
      i === hostCpuSeries ? -1 : pio.pushSignal(s.signal, parseDomain(s.domain), s.index),
    );
  }

  /** One reading of every series, stamped with the middle of the read on the shared clock. */
  async read(into: SampleSet): Promise<void> {
    const before = clockMs();
    let batchError: string | undefined;
    if (this.handles.some((h) => h >= 0)) {
      try {
        await this.pio.readBatch();
      } catch (err) {
        batchError = errorMessage(err);
      }
    }
    const after = clockMs();
    into.times.push(((before + after) / 2 - into.originMs) / 1000);
    this.handles.forEach((h, i) => {
      into.values[i]!.push(i === this.hostCpuSeries ? this.hostCpuUtil() : this.sampleOne(h, i, batchError));
    });
    this.reads++;
  }

  private sampleOne(handle: number, i: number, batchError: string | undefined): number {
    if (batchError !== undefined) return this.fail(i, batchError);
    try {
      const v = this.pio.sample(handle);
      return Number.isFinite(v) ? v : this.fail(i, 'read returned NaN');
    } catch (err) {
      return this.fail(i, errorMessage(err));
    }
  }

  private fail(i: number, reason: string): number {
    const id = this.series[i]!.id;
    // A rate signal (utilisation) has no value at its first read: that is not a failure.
    const firstRead = this.reads === 0 && reason === 'read returned NaN';
    if (!firstRead && !this.errors.has(id)) {
      this.errors.set(id, reason);
      this.onFirstFailure?.(id, reason);
    }
    return Number.NaN;
  }

  /** Busy fraction of all CPUs since the previous call (NaN on the first). */
  private hostCpuUtil(): number {
    let busy = 0;
    let total = 0;
    for (const c of cpus()) {
      const t = c.times;
      const all = t.user + t.nice + t.sys + t.idle + t.irq;
      total += all;
      busy += all - t.idle;
    }
    const prev = this.cpuTimes;
    this.cpuTimes = { busy, total };
    if (!prev || total <= prev.total) return Number.NaN;
    return (busy - prev.busy) / (total - prev.total);
  }
}

/**
 * Samples every `periodMs` against absolute deadlines (start + k·period), so read time and timer
 * lateness never accumulate into drift. A deadline missed entirely is skipped, not caught up
 * with a burst, and counted in `overruns`.
 */
export class SamplingLoop {
  overruns = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private inFlight: Promise<void> = Promise.resolve();
  private startMs = 0;
  private k = 0;

  constructor(
    private readonly sampler: Sampler,
    private readonly data: SampleSet,
    private readonly periodMs: number,
    private readonly onSample?: () => void,
  ) {}

  /** Takes the first sample now and schedules the rest. */
  async start(): Promise<void> {
    this.startMs = clockMs();
    await this.sampler.read(this.data);
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    const now = clockMs();
    let next = this.startMs + (this.k + 1) * this.periodMs;
    if (next <= now) {
      const skip = Math.floor((now - this.startMs) / this.periodMs) + 1;
      this.overruns += skip - (this.k + 1);
      this.k = skip - 1;
      next = this.startMs + (this.k + 1) * this.periodMs;
    }
    this.k++;
    this.timer = setTimeout(() => {
      this.inFlight = this.sampler.read(this.data).then(() => {
        this.onSample?.();
        this.schedule();
      });
    }, next - now);
    this.timer.unref?.();
  }

  /** Stops the loop and takes the final sample. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.inFlight;
    await this.sampler.read(this.data);
  }
}
