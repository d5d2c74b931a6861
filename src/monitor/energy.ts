import { WrappingCounter } from '../platform/energy-counter.js';

/**
 * The energy maths of the monitor, on plain arrays: no I/O, no clocks.
 *
 * Every series becomes a list of segments: an interval [t0, t1] in which a known amount was
 * accumulated (joules for energy, value·seconds for levels such as utilisation). Totals, means
 * and region cuts are then one generic reduction over segments, whatever the source was.
 *
 * Gaps (NaN readings) are handled by the kind of source:
 * - counters: the segment runs from the last good reading to the next good one, so ΔE across a
 *   gap is still exact (the counter kept counting while we could not read it);
 * - instantaneous values (power, utilisation, memory): a trapezoid needs both ends, so an
 *   interval next to a gap is left out and reported as not covered; nothing is invented for it.
 */
export interface Segment {
  t0: number;
  t1: number;
  /** Amount accumulated in [t0, t1]. */
  amount: number;
}

export interface CounterResult {
  segments: Segment[];
  /** Readings the counter refused (went backwards, out of range), with why. */
  anomalies: string[];
}

/** Default counter resolution used to feed float joules to the integer wrap corrector (1 µJ). */
const ENERGY_QUANTUM = 1e-6;
/** Modulus used when a counter's wrap range is unknown: such counters are treated as 64-bit. */
const UNBOUNDED_MODULUS = 2n ** 64n;

/**
 * Segments of a cumulative counter (joules, bytes): Σ wrap-corrected ΔE between good readings.
 * `wrapRange` is the counter's modulus in the same unit (RAPL's max_energy_range_uj as J), or
 * undefined when the source already extends it.
 */
export function counterSegments(
  times: readonly number[],
  values: readonly number[],
  wrapRange?: number,
  quantum = ENERGY_QUANTUM,
): CounterResult {
  const modulus = wrapRange === undefined ? UNBOUNDED_MODULUS : BigInt(Math.round(wrapRange / quantum));
  const counter = new WrappingCounter(modulus);
  const segments: Segment[] = [];
  const anomalies: string[] = [];
  let lastTime = Number.NaN;
  let lastTotal: bigint | undefined;
  for (let i = 0; i < times.length; i++) {
    const v = values[i]!;
    const t = times[i]!;
    if (!Number.isFinite(v) || !Number.isFinite(t)) continue;
    const update = counter.feed(BigInt(Math.round(v / quantum)));
    if (update.anomaly) {
      anomalies.push(`t=${t.toFixed(3)} s: ${update.anomaly.message}`);
      continue;
    }
    if (lastTotal !== undefined && t > lastTime) {
      segments.push({ t0: lastTime, t1: t, amount: Number(update.total - lastTotal) * quantum });
    }
    lastTotal = update.total;
    lastTime = t;
  }
  return { segments, anomalies };
}

/** Segments of ∫value dt by trapezoids between adjacent readings that are both good. */
export function trapezoidSegments(times: readonly number[], values: readonly number[]): Segment[] {
  const segments: Segment[] = [];
  for (let i = 1; i < times.length; i++) {
    const t0 = times[i - 1]!;
    const t1 = times[i]!;
    const v0 = values[i - 1]!;
    const v1 = values[i]!;
    if (!Number.isFinite(v0) || !Number.isFinite(v1) || !(t1 > t0)) continue;
    segments.push({ t0, t1, amount: ((v0 + v1) / 2) * (t1 - t0) });
  }
  return segments;
}

/**
 * Segments of ∫value dt for rate readings (utilisation): each reading is the mean over the
 * interval since the previous reading, so it covers that interval alone. The first reading
 * covers nothing (and may be NaN: a rate needs two snapshots).
 */
export function stepSegments(times: readonly number[], values: readonly number[]): Segment[] {
  const segments: Segment[] = [];
  for (let i = 1; i < times.length; i++) {
    const t0 = times[i - 1]!;
    const t1 = times[i]!;
    const v = values[i]!;
    if (!Number.isFinite(v) || !(t1 > t0)) continue;
    segments.push({ t0, t1, amount: v * (t1 - t0) });
  }
  return segments;
}

/** Σ amount over the segments. */
export function total(segments: readonly Segment[]): number {
  let sum = 0;
  for (const s of segments) sum += s.amount;
  return sum;
}

/** Seconds covered by the segments. */
export function covered(segments: readonly Segment[]): number {
  let sum = 0;
  for (const s of segments) sum += s.t1 - s.t0;
  return sum;
}

/**
 * Amount inside [a, b]: whole segments inside count fully, segments cut by an edge count in
 * proportion to the overlap (the best estimate between two readings; exact at readings).
 * Segments are in time order (every builder here walks the sample times): a binary search finds
 * the first one that can overlap, so a run with many region calls is not calls × samples.
 */
export function amountWithin(
  segments: readonly Segment[],
  a: number,
  b: number,
): { amount: number; seconds: number } {
  let amount = 0;
  let seconds = 0;
  let first = 0;
  for (let hi = segments.length; first < hi; ) {
    const mid = (first + hi) >> 1;
    if (segments[mid]!.t1 <= a) first = mid + 1;
    else hi = mid;
  }
  for (let i = first; i < segments.length; i++) {
    const s = segments[i]!;
    if (s.t0 >= b) break;
    const lo = Math.max(a, s.t0);
    const hi = Math.min(b, s.t1);
    if (hi <= lo) continue;
    const share = (hi - lo) / (s.t1 - s.t0);
    amount += s.amount * share;
    seconds += hi - lo;
  }
  return { amount, seconds };
}

/** Time-weighted mean (amount per covered second); NaN when nothing is covered. */
export function timeWeightedMean(segments: readonly Segment[]): number {
  const secs = covered(segments);
  return secs > 0 ? total(segments) / secs : Number.NaN;
}

/** Last good minus first good reading of a cumulative byte counter; NaN with fewer than two. */
export function counterIncrease(times: readonly number[], values: readonly number[]): number {
  const segs = counterSegments(times, values, undefined, 1).segments;
  return segs.length === 0 ? Number.NaN : total(segs);
}

/** Mean and sample standard deviation (n−1); std is 0 for one value, both NaN for none. */
export function meanStd(values: readonly number[]): { mean: number; std: number } {
  const xs = values.filter(Number.isFinite);
  if (xs.length === 0) return { mean: Number.NaN, std: Number.NaN };
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (xs.length === 1) return { mean, std: 0 };
  const variance = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1);
  return { mean, std: Math.sqrt(variance) };
}
