import { px } from './format.js';

/**
 * Samples of one series as two columns, times (s) and values; a NaN value is a gap (a failed
 * read), never drawn as 0. Columns, not an object per sample: a long run's plots hold 10^5–10^6
 * samples, and an object per sample cost ~70 bytes where a column costs 8.
 */
export interface Samples {
  t: ArrayLike<number>;
  value: ArrayLike<number>;
}

/** Samples with both a time and a value (an imported report may have columns of unequal length). */
export const sampleCount = (s: Samples): number => Math.min(s.t.length, s.value.length);

/**
 * Min/max decimation: of the samples that fall into one pixel column (`column(t)`, floored), only
 * the least and the largest are kept, in time order. The line then covers the same pixels as
 * with every sample, at no more than two points per column (10^5 samples per series shrink to
 * ~1700). A gap (NaN) closes the column, so gaps stay where they are.
 */
export function decimate(samples: Samples, column: (t: number) => number): Samples {
  const out = { t: [] as number[], value: [] as number[] };
  const keep = (k: number) => {
    out.t.push(samples.t[k]!);
    out.value.push(samples.value[k]!);
  };
  let current = Number.NaN;
  let low = -1;
  let high = -1;
  const flush = () => {
    if (low >= 0) {
      keep(Math.min(low, high));
      if (low !== high) keep(Math.max(low, high));
    }
    low = high = -1;
  };
  for (let k = 0; k < sampleCount(samples); k++) {
    const v = samples.value[k]!;
    if (!Number.isFinite(v)) {
      flush();
      if (out.value.length > 0 && Number.isFinite(out.value.at(-1))) keep(k);
      continue;
    }
    const c = Math.floor(column(samples.t[k]!));
    if (c !== current) flush();
    current = c;
    if (low < 0 || v < samples.value[low]!) low = k;
    if (high < 0 || v > samples.value[high]!) high = k;
  }
  flush();
  return out;
}

/**
 * The `d` of one <path> for a series: a subpath per stretch between gaps, coordinates to 0.1 px,
 * repeated points left out. A lone sample between two gaps is a zero-length segment, which the
 * line's round caps draw as a dot.
 */
export function linePath(samples: Samples, x: (t: number) => number, y: (v: number) => number): string {
  const parts: string[] = [];
  let last = '';
  let open = false;
  let lone = false;
  for (let k = 0; k < sampleCount(samples); k++) {
    const v = samples.value[k]!;
    if (!Number.isFinite(v)) {
      if (lone) parts.push('h0');
      open = lone = false;
      continue;
    }
    const point = `${px(x(samples.t[k]!))},${px(y(v))}`;
    if (!open) parts.push(`M${point}`);
    else if (point !== last) parts.push(`L${point}`);
    lone = !open || (lone && point === last);
    open = true;
    last = point;
  }
  if (lone) parts.push('h0');
  return parts.join('');
}
