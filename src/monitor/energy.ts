import { WrappingCounter } from '../platform/energy-counter.js';
import { type Segment, total } from '../platform/integration.js';

/**
 * Cumulative counters (energy in joules, bytes) as segments: ΔE between good readings, wrap
 * corrected. A gap (NaN reading) does not cut a counter: the segment runs from the last good
 * reading to the next one, so ΔE across it is still exact (the counter kept counting while it
 * could not be read). Instantaneous and rate readings are integrated by platform/integration.ts.
 */
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

/** Last good minus first good reading of a cumulative byte counter; NaN with fewer than two. */
export function counterIncrease(times: readonly number[], values: readonly number[]): number {
  const segs = counterSegments(times, values, undefined, 1).segments;
  return segs.length === 0 ? Number.NaN : total(segs);
}
