/** Text and numbers as they go into SVG markup. */

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for element content and for double- or single-quoted attribute values. */
export const escapeXml = (s: string): string => s.replace(/[&<>"']/g, (c) => ENTITIES[c]!);

/** A coordinate rounded to 0.1 px: finer is invisible and only makes the file larger. */
export const px = (v: number): string => String(Math.round(v * 10) / 10);

/** `x.toFixed(digits)`; NaN as n/a. */
export const fixed = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

/** Four significant digits, trailing zeros dropped (2.54, 0.06051, 123500); NaN as n/a. */
export const significant = (x: number, digits = 4): string =>
  Number.isFinite(x) ? String(Number(x.toPrecision(digits))) : 'n/a';

/** Digits after the point that a multiple of `step` (1, 2 or 5 × 10^k) needs. */
export const decimalsOf = (step: number): number => Math.max(0, -Math.floor(Math.log10(step) + 1e-9));

const PREFIXES = ['', 'k', 'M', 'G', 'T', 'P', 'E'];

/**
 * A tick label: as many decimals as the tick step needs (0.3, never 0.30000000000000004); from
 * 10 000 up an SI prefix (20k, 4.5G) keeps the label short.
 */
export function tickLabel(value: number, step: number, largest: number): string {
  const power = largest >= 1e4 ? Math.min(Math.floor(Math.log10(largest) / 3), PREFIXES.length - 1) : 0;
  const unit = 1000 ** power;
  return `${(value / unit).toFixed(decimalsOf(step / unit))}${value === 0 ? '' : PREFIXES[power]}`;
}

/** Width of a text in px at `fontSize` px sans-serif, estimated on the safe side (no layout engine here). */
export const textWidth = (text: string, fontSize: number): number => text.length * fontSize * 0.62;
