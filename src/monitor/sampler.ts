import { parseDomain } from '../platform/domains.js';
import { errorMessage, PermissionError } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import type { SampleSet } from '../platform/sample-set.js';
import type { SeriesSpec } from '../platform/signal-catalogue.js';
import { clockMs } from './clock.js';
import { storedValue } from './signals.js';

/** Why a read failed when PlatformIO gave NaN without an error. */
export const NAN_READ = 'read returned NaN';

/**
 * Reads a fixed set of series through PlatformIO's batch interface. A failed read is NaN, never
 * 0, and the first failure of each series is kept as a diagnostic, with the reason the backend
 * gave (PlatformIO.sampleError) where it gave one. Values are stored in the report's units
 * (storedValue: utilisation in percent).
 *
 * A series has no value before its first reading, and a rate (utilisation) before two
 * readings that are apart in time: NaN before a series' first value means "no value yet", not a
 * failure. A series that never gives a value is reported by `withoutValue()`.
 */
export class Sampler {
  readonly errors = new Map<string, string>();
  /** Series whose first failure was a permission refusal (a grant through the daemon helps). */
  readonly denied = new Set<string>();
  private readonly handles: number[];
  private readonly hasValue: boolean[];
  private reads = 0;

  constructor(
    private readonly pio: PlatformIO,
    readonly series: SeriesSpec[],
    /** Told of the first failed read of each series, when it happens. */
    private readonly onFirstFailure?: (id: string, reason: string) => void,
  ) {
    this.handles = series.map((s) => pio.pushSignal(s.signal, parseDomain(s.domain), s.index));
    this.hasValue = series.map(() => false);
  }

  /** One reading of every series, stamped with the middle of the read on the shared clock. */
  async read(into: SampleSet): Promise<void> {
    const before = clockMs();
    let batchError: string | undefined;
    if (this.handles.length > 0) {
      try {
        await this.pio.readBatch();
      } catch (err) {
        batchError = errorMessage(err);
      }
    }
    const after = clockMs();
    into.times.push(((before + after) / 2 - into.originMs) / 1000);
    this.handles.forEach((h, i) => {
      into.values[i]!.push(this.sampleOne(h, i, batchError));
    });
    this.reads++;
  }

  /** Series that have not given a single value in the reads so far (none before any read). */
  withoutValue(): SeriesSpec[] {
    return this.reads === 0 ? [] : this.series.filter((_s, i) => !this.hasValue[i]);
  }

  /** A series' value; when a batch failed, the backends that did read still give theirs. */
  private sampleOne(handle: number, i: number, batchError: string | undefined): number {
    try {
      const v = this.pio.sample(handle);
      if (Number.isFinite(v)) {
        this.hasValue[i] = true;
        return storedValue(this.series[i]!.kind, v);
      }
      const err = this.pio.sampleError(handle);
      if (err) return this.fail(i, errorMessage(err), err instanceof PermissionError);
      return batchError === undefined ? this.noValue(i) : this.fail(i, batchError);
    } catch (err) {
      return this.fail(i, errorMessage(err), err instanceof PermissionError);
    }
  }

  private noValue(i: number): number {
    const waiting = !this.hasValue[i] && (this.reads === 0 || this.series[i]!.kind === 'util');
    return waiting ? Number.NaN : this.fail(i, NAN_READ);
  }

  private fail(i: number, reason: string, denied = false): number {
    const id = this.series[i]!.id;
    if (!this.errors.has(id)) {
      this.errors.set(id, reason);
      if (denied) this.denied.add(id);
      this.onFirstFailure?.(id, reason);
    }
    return Number.NaN;
  }
}

/**
 * Why a series gives no value: a single read through PlatformIO names the cause (a missing or
 * garbled file, a permission) where a batch read only gives NaN.
 */
export async function whyNoValue(pio: PlatformIO, s: SeriesSpec): Promise<string> {
  try {
    const v = await pio.readSignal(s.signal, parseDomain(s.domain), s.index);
    // A utilisation is a ratio of counter deltas: NaN means its counters did not advance.
    if (!Number.isFinite(v))
      return s.kind === 'util' ? 'no CPU time elapsed on its counters between reads' : NAN_READ;
    // It reads now: the run was too short for it.
    return s.kind === 'util'
      ? 'no sample had a value (a utilisation needs two samples at least one clock tick apart)'
      : 'no sample had a value';
  } catch (err) {
    return errorMessage(err);
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
    private readonly sampler: Pick<Sampler, 'read'>,
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
