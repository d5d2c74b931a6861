import { px } from './format.js';

/** One sample of a series; a NaN value is a gap (a failed read), never drawn as 0. */
export interface Sample {
  t: number;
  value: number;
}

/**
 * Min/max decimation: of the samples that fall into one pixel column (`column(t)`, floored), only
 * the least and the largest are kept, in time order. The line then covers the same pixels as
 * with every sample, at no more than two points per column (10^5 samples per series shrink to
 * ~1700). A gap (NaN) closes the column, so gaps stay where they are.
 */
export function decimate(samples: readonly Sample[], column: (t: number) => number): Sample[] {
  const out: Sample[] = [];
  let current = Number.NaN;
  let low: Sample | undefined;
  let high: Sample | undefined;
  let lowAt = 0;
  let highAt = 0;
  const flush = () => {
    if (low && high) {
      if (low === high) out.push(low);
      else out.push(...(lowAt < highAt ? [low, high] : [high, low]));
    }
    low = high = undefined;
  };
  samples.forEach((s, i) => {
    if (!Number.isFinite(s.value)) {
      flush();
      if (out.length > 0 && Number.isFinite(out.at(-1)!.value)) out.push(s);
      return;
    }
    const c = Math.floor(column(s.t));
    if (c !== current) flush();
    current = c;
    if (!low || s.value < low.value) [low, lowAt] = [s, i];
    if (!high || s.value > high.value) [high, highAt] = [s, i];
  });
  flush();
  return out;
}

/**
 * The `d` of one <path> for a series: a subpath per stretch between gaps, coordinates to 0.1 px,
 * repeated points left out. A lone sample between two gaps is a zero-length segment, which the
 * line's round caps draw as a dot.
 */
export function linePath(
  samples: readonly Sample[],
  x: (t: number) => number,
  y: (v: number) => number,
): string {
  const parts: string[] = [];
  let last = '';
  let open = false;
  let lone = false;
  for (const s of samples) {
    if (!Number.isFinite(s.value)) {
      if (lone) parts.push('h0');
      open = lone = false;
      continue;
    }
    const point = `${px(x(s.t))},${px(y(s.value))}`;
    if (!open) parts.push(`M${point}`);
    else if (point !== last) parts.push(`L${point}`);
    lone = !open || (lone && point === last);
    open = true;
    last = point;
  }
  if (lone) parts.push('h0');
  return parts.join('');
}
