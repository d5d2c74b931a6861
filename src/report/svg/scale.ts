/** Linear scales and their ticks: round steps (1, 2 or 5 × 10^k), as a reader counts. */
import { decimalsOf } from './format.js';

export type Domain = readonly [number, number];

export interface Axis {
  domain: Domain;
  /** Tick values inside the domain, multiples of `step`, exact to the step's decimals. */
  ticks: number[];
  step: number;
}

/** A round step that cuts `span` into about `count` parts (d3's thresholds: √50, √10, √2). */
export function niceStep(span: number, count: number): number {
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const ratio = raw / power;
  return (ratio >= Math.sqrt(50) ? 10 : ratio >= Math.sqrt(10) ? 5 : ratio >= Math.sqrt(2) ? 2 : 1) * power;
}

/** k × step, rounded to the step's decimals (0.3, not 0.30000000000000004). */
const multiple = (k: number, step: number) => Number((k * step).toFixed(decimalsOf(step)));

/** The multiples of `step` in [lo, hi]. */
export function ticksOf(lo: number, hi: number, step: number): number[] {
  const ticks: number[] = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) ticks.push(multiple(k, step));
  return ticks;
}

/** A span of zero (one value) widened so that it can be drawn. */
function widened(lo: number, hi: number): Domain {
  if (hi > lo) return [lo, hi];
  const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
  return [lo - pad, hi + pad];
}

/** An axis over exactly [lo, hi] (the time axis: every plot of a round spans the same time). */
export function fixedAxis(lo: number, hi: number, count: number): Axis {
  const domain = widened(lo, hi);
  const step = niceStep(domain[1] - domain[0], count);
  return { domain, ticks: ticksOf(domain[0], domain[1], step), step };
}

/** Room above the largest value (and below a negative least), so a line never runs along the frame. */
export const HEADROOM = 0.05;

/**
 * A value axis from 0 (or the least value, when negative) to a round tick at least 5 % above the
 * largest value (or above `top`, when given: see robustMax in html.ts). Undefined when no value
 * is finite: nothing to plot.
 */
export function valueAxis(values: Iterable<number>, count: number, top?: number): Axis | undefined {
  let least = Number.POSITIVE_INFINITY;
  let largest = Number.NEGATIVE_INFINITY;
  for (const v of values)
    if (Number.isFinite(v)) {
      least = Math.min(least, v);
      largest = Math.max(largest, v);
    }
  if (least > largest) return undefined;
  const hi = Math.max(0, top ?? largest) * (1 + HEADROOM);
  const lo = Math.min(0, least) * (1 + HEADROOM);
  // Every value 0: a unit span above it.
  const [from, to] = hi > lo ? [lo, hi] : [0, 1];
  const step = niceStep(to - from, count);
  const domain: Domain = [
    multiple(Math.floor(from / step + 1e-9), step),
    multiple(Math.ceil(to / step - 1e-9), step),
  ];
  return { domain, ticks: ticksOf(domain[0], domain[1], step), step };
}

/** Maps `domain` linearly onto `range` (pixels). */
export function linear(domain: Domain, range: Domain): (v: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const k = (r1 - r0) / (d1 - d0);
  return (v) => r0 + (v - d0) * k;
}
