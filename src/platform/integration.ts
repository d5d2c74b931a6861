/**
 * Integrals of sampled values over time (power → energy, utilisation → busy seconds): the one
 * implementation the monitor, the progress line and the AMD energy check use.
 *
 * A series becomes segments: an interval [t0, t1] in which a known amount was accumulated.
 * Totals, time-weighted means and cuts at region edges are one reduction over segments.
 *
 * A NaN sample is a gap, never 0: no segment uses it, so an interval next to a gap is left out
 * (and shows as not covered) rather than filled with an invented value. Intervals in which time
 * does not advance are left out as well.
 */
export interface Segment {
  t0: number;
  t1: number;
  /** Amount accumulated in [t0, t1]. */
  amount: number;
}

/**
 * Segments in time order, held as three columns of doubles. A long run has one segment per
 * sample interval of every series: an object each cost ~80 bytes of heap (10,000 samples of six
 * series: +5 MB while a round's figures were computed), a column entry costs 24.
 */
export class Segments implements Iterable<Segment> {
  length = 0;
  private columns = [new Float64Array(64), new Float64Array(64), new Float64Array(64)] as const;

  push(t0: number, t1: number, amount: number): void {
    if (this.length === this.columns[0].length) {
      const size = 2 * this.length;
      this.columns = this.columns.map((c) => {
        const wider = new Float64Array(size);
        wider.set(c);
        return wider;
      }) as unknown as typeof this.columns;
    }
    this.columns[0][this.length] = t0;
    this.columns[1][this.length] = t1;
    this.columns[2][this.length] = amount;
    this.length++;
  }

  t0(i: number): number {
    return this.columns[0][i]!;
  }

  t1(i: number): number {
    return this.columns[1][i]!;
  }

  amount(i: number): number {
    return this.columns[2][i]!;
  }

  *[Symbol.iterator](): Iterator<Segment> {
    for (let i = 0; i < this.length; i++) yield { t0: this.t0(i), t1: this.t1(i), amount: this.amount(i) };
  }
}

/**
 * ∫v dt over [t0, t1] for instantaneous readings (power, memory): the trapezoid between the two
 * readings. NaN when either reading is a gap or time does not advance.
 */
export function trapezoid(t0: number, v0: number, t1: number, v1: number): number {
  if (!Number.isFinite(v0) || !Number.isFinite(v1) || !(t1 > t0)) return Number.NaN;
  return ((v0 + v1) / 2) * (t1 - t0);
}

/**
 * ∫v dt over [t0, t1] for a rate reading (utilisation): `v1` is the mean over the interval that
 * ends with it, so it covers that interval alone. NaN when it is a gap or time does not advance.
 */
export function step(t0: number, t1: number, v1: number): number {
  if (!Number.isFinite(v1) || !(t1 > t0)) return Number.NaN;
  return v1 * (t1 - t0);
}

function segmentsOf(
  times: readonly number[],
  values: readonly number[],
  area: (t0: number, v0: number, t1: number, v1: number) => number,
): Segments {
  const segments = new Segments();
  for (let i = 1; i < times.length; i++) {
    const t0 = times[i - 1]!;
    const t1 = times[i]!;
    const amount = area(t0, values[i - 1]!, t1, values[i]!);
    if (!Number.isNaN(amount)) segments.push(t0, t1, amount);
  }
  return segments;
}

/** Segments of ∫value dt by trapezoids between adjacent readings that are both good. */
export function trapezoidSegments(times: readonly number[], values: readonly number[]): Segments {
  return segmentsOf(times, values, trapezoid);
}

/**
 * Segments of ∫value dt for rate readings: each good reading covers the interval since the one
 * before. The first reading covers nothing (a rate needs two snapshots, so it is often NaN).
 */
export function stepSegments(times: readonly number[], values: readonly number[]): Segments {
  return segmentsOf(times, values, (t0, _v0, t1, v1) => step(t0, t1, v1));
}

/** Σ amount over the segments (0 for none: callers decide what "nothing covered" means). */
export function total(segments: Segments): number {
  let sum = 0;
  for (let i = 0; i < segments.length; i++) sum += segments.amount(i);
  return sum;
}

/** Seconds covered by the segments. */
export function covered(segments: Segments): number {
  let sum = 0;
  for (let i = 0; i < segments.length; i++) sum += segments.t1(i) - segments.t0(i);
  return sum;
}

/** Time-weighted mean (amount per covered second); NaN when nothing is covered. */
export function timeWeightedMean(segments: Segments): number {
  const secs = covered(segments);
  return secs > 0 ? total(segments) / secs : Number.NaN;
}

/**
 * Amount inside [a, b]: whole segments inside count fully, segments cut by an edge count in
 * proportion to the overlap (the best estimate between two readings; exact at readings).
 * Segments are in time order (every builder walks sample times): a binary search finds the
 * first one that can overlap, so a run with many region calls is not calls × samples.
 */
export function amountWithin(segments: Segments, a: number, b: number): { amount: number; seconds: number } {
  let amount = 0;
  let seconds = 0;
  let first = 0;
  for (let hi = segments.length; first < hi; ) {
    const mid = (first + hi) >> 1;
    if (segments.t1(mid) <= a) first = mid + 1;
    else hi = mid;
  }
  for (let i = first; i < segments.length; i++) {
    const [t0, t1] = [segments.t0(i), segments.t1(i)];
    if (t0 >= b) break;
    const lo = Math.max(a, t0);
    const hi = Math.min(b, t1);
    if (hi <= lo) continue;
    amount += segments.amount(i) * ((hi - lo) / (t1 - t0));
    seconds += hi - lo;
  }
  return { amount, seconds };
}

/**
 * A running trapezoidal integral, for a quantity that must keep counting (energy derived from
 * power readings, served as a counter). A counter cannot leave a hole, so across a gap it spans
 * the trapezoid from the last good reading to the next one, as if sampled less often; the
 * reading that is a gap itself gives NaN (a failed read), never a made-up amount.
 */
export class RunningIntegral {
  private time: number;
  private value: number;
  private amount: number;

  /** Starts at `amount` with the reading (`time`, `value`); a NaN value means none yet. */
  constructor(start: { time: number; value: number; amount: number }) {
    this.time = start.time;
    this.value = start.value;
    this.amount = start.amount;
  }

  /** Adds a reading; returns the integral so far, or NaN when this reading is a gap. */
  add(time: number, value: number): number {
    if (!Number.isFinite(value)) return Number.NaN;
    const area = trapezoid(this.time, this.value, time, value);
    if (!Number.isNaN(area)) this.amount += area;
    if (!(time < this.time)) {
      this.time = time;
      this.value = value;
    }
    return this.amount;
  }
}
