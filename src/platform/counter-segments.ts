import { WrappingCounter } from './energy-counter.js';
import { type Segment, Segments, total, trapezoid } from './integration.js';

/**
 * Cumulative counters (energy in joules, bytes) as segments: ΔE between good readings, wrap
 * corrected. A gap (NaN reading) does not cut a counter: the segment runs from the last good
 * reading to the next one, so ΔE across it is still exact (the counter kept counting while it
 * could not be read). Instantaneous and rate readings are integrated by platform/integration.ts.
 */
export interface CounterResult {
  segments: Segments;
  /** Readings the counter refused (went backwards, out of range), with why. */
  anomalies: string[];
}

/** Default counter resolution used to feed float joules to the integer wrap corrector (1 µJ). */
const ENERGY_QUANTUM = 1e-6;
/** Modulus used when a counter's wrap range is unknown: such counters are treated as 64-bit. */
const UNBOUNDED_MODULUS = 2n ** 64n;

/**
 * A cumulative counter read one reading at a time: each good reading after the first gives the
 * segment since the last good one (wrap corrected), or an anomaly. counterSegments and the live
 * progress line (RunningEnergy) both use it, so they agree to the last bit.
 */
export class CounterSteps {
  private readonly counter: WrappingCounter;
  private lastTime = Number.NaN;
  private lastTotal: bigint | undefined;

  /**
   * `wrapRange` is the counter's modulus in the same unit (RAPL's max_energy_range_uj as J), or
   * undefined when the source already extends it.
   */
  constructor(
    wrapRange?: number,
    private readonly quantum = ENERGY_QUANTUM,
  ) {
    const modulus = wrapRange === undefined ? UNBOUNDED_MODULUS : BigInt(Math.round(wrapRange / quantum));
    this.counter = new WrappingCounter(modulus);
  }

  /** The segment this reading closes, an anomaly message, or nothing (a gap, the first one). */
  feed(t: number, v: number): { segment?: Segment; anomaly?: string } {
    if (!Number.isFinite(v) || !Number.isFinite(t)) return {};
    const update = this.counter.feed(BigInt(Math.round(v / this.quantum)));
    if (update.anomaly) return { anomaly: `t=${t.toFixed(3)} s: ${update.anomaly.message}` };
    let segment: Segment | undefined;
    if (this.lastTotal !== undefined && t > this.lastTime) {
      segment = { t0: this.lastTime, t1: t, amount: Number(update.total - this.lastTotal) * this.quantum };
    }
    this.lastTotal = update.total;
    this.lastTime = t;
    return segment ? { segment } : {};
  }
}

/**
 * Segments of a cumulative counter (joules, bytes): Σ wrap-corrected ΔE between good readings.
 * `wrapRange` as for CounterSteps.
 */
export function counterSegments(
  times: readonly number[],
  values: readonly number[],
  wrapRange?: number,
  quantum = ENERGY_QUANTUM,
): CounterResult {
  const steps = new CounterSteps(wrapRange, quantum);
  const segments = new Segments();
  const anomalies: string[] = [];
  for (let i = 0; i < times.length; i++) {
    const r = steps.feed(times[i]!, values[i]!);
    if (r.segment) segments.push(r.segment.t0, r.segment.t1, r.segment.amount);
    if (r.anomaly) anomalies.push(r.anomaly);
  }
  return { segments, anomalies };
}

/**
 * Energy of one series so far, one reading at a time, by the rules the report applies to the
 * whole round (counterSegments for counters, trapezoidSegments for power): the same amounts
 * summed in the same order, so the live total is the report's.
 */
export class RunningEnergy {
  /** Joules so far (0 before the first segment). */
  energy = 0;
  /** Segments so far: with none, its energy is unknown (NaN in the report). */
  segments = 0;
  /** Whether any reading was good: a series never read is not measured at all. */
  read = false;
  private readonly counter?: CounterSteps;
  private lastTime = Number.NaN;
  private lastValue = Number.NaN;

  constructor(kind: 'energy' | 'power') {
    if (kind === 'energy') this.counter = new CounterSteps();
  }

  add(t: number, v: number): void {
    const amount = this.counter
      ? this.counter.feed(t, v).segment?.amount
      : trapezoid(this.lastTime, this.lastValue, t, v);
    this.lastTime = t;
    this.lastValue = v;
    if (Number.isFinite(v)) this.read = true;
    if (amount === undefined || Number.isNaN(amount)) return;
    this.energy += amount;
    this.segments++;
  }
}

/** Last good minus first good reading of a cumulative byte counter; NaN with fewer than two. */
export function counterIncrease(times: readonly number[], values: readonly number[]): number {
  const segs = counterSegments(times, values, undefined, 1).segments;
  return segs.length === 0 ? Number.NaN : total(segs);
}
