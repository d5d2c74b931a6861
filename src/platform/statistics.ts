/**
 * Descriptive statistics: the one rule every mean and standard deviation in joulegate follows
 * (signal aggregation, geopmsession reports, the monitor's rounds and regions).
 *
 * - NaN is a missing value (a failed read), never 0: it is skipped and not counted.
 * - The mean of no values is NaN.
 * - `std` is the sample standard deviation (divisor n − 1), NaN with fewer than two values:
 *   the spread of a single measurement is unknown, not 0.
 *
 * This is GEOPM's rule (Agg::stddev and the geopmsession report). perun's Stats use numpy's
 * population deviation (divisor n, 0 for one value); for the few rounds a benchmark runs,
 * n − 1 is the unbiased estimate, so reports show no "± std" where there is a single value.
 */
export interface Summary {
  /** Values that were not NaN. */
  count: number;
  /** First and last non-NaN value in input order; NaN when there is none. */
  first: number;
  last: number;
  min: number;
  max: number;
  /** NaN when count is 0. */
  sum: number;
  mean: number;
  std: number;
}

/**
 * Running summary of a stream of values, for inputs too long to keep (a session sampling for
 * hours). The mean is sum / count; the deviation uses Welford's update, which stays accurate
 * where the sum-of-squares formula cancels (large values, small spread).
 */
export class RunningStats {
  private count = 0;
  private first = Number.NaN;
  private last = Number.NaN;
  private min = Number.NaN;
  private max = Number.NaN;
  private sum = 0;
  private runningMean = 0;
  private m2 = 0;

  add(v: number): void {
    if (Number.isNaN(v)) return;
    if (this.count === 0) {
      this.first = v;
      this.min = v;
      this.max = v;
    }
    this.count++;
    this.last = v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
    this.sum += v;
    const delta = v - this.runningMean;
    this.runningMean += delta / this.count;
    this.m2 += delta * (v - this.runningMean);
  }

  summary(): Summary {
    const n = this.count;
    return {
      count: n,
      first: this.first,
      last: this.last,
      min: this.min,
      max: this.max,
      sum: n === 0 ? Number.NaN : this.sum,
      mean: n === 0 ? Number.NaN : this.sum / n,
      std: n < 2 ? Number.NaN : Math.sqrt(this.m2 / (n - 1)),
    };
  }
}

/** Summary of a list of values under the rule above. */
export function summarize(values: Iterable<number>): Summary {
  const stats = new RunningStats();
  for (const v of values) stats.add(v);
  return stats.summary();
}
