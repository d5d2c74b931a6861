const PREFIXES: readonly [string, number][] = [
  ['T', 1e12],
  ['G', 1e9],
  ['M', 1e6],
  ['k', 1e3],
  ['', 1],
  ['m', 1e-3],
];

/** Magnitude of a prefix symbol ('' = 1; 'u' and 'µ' = micro). */
export function prefixFactor(symbol: string): number {
  if (symbol === 'u' || symbol === 'µ') return 1e-6;
  if (symbol === 'n') return 1e-9;
  if (symbol === 'p') return 1e-12;
  return PREFIXES.find(([p]) => p === symbol)?.[1] ?? 1;
}

/** Picks the 1e3-step prefix that keeps |v| in [1, 1000). */
export function autoPrefix(v: number): string {
  const a = Math.abs(v);
  if (!Number.isFinite(a) || a === 0) return '';
  return (PREFIXES.find(([, f]) => a >= f) ?? PREFIXES.at(-1)!)[0];
}

/** `12.345 kJ`; prefixes only for J, W, B (perun's value2ValueUnitStr); n/a for a gap. */
export function withUnit(v: number, unit: string, digits = 3): string {
  if (!Number.isFinite(v)) return 'n/a';
  const prefix = ['J', 'W', 'B', 'g'].includes(unit) ? autoPrefix(v) : '';
  return `${(v / prefixFactor(prefix)).toFixed(digits)} ${prefix}${unit}`.trimEnd();
}

/**
 * `mean ± std unit` with one shared prefix; just `mean unit` where std is NaN (a single value:
 * its spread is unknown, see platform/statistics.ts).
 */
export function meanStdUnit(mean: number, std: number, unit: string): string {
  if (!Number.isFinite(mean)) return 'n/a';
  const prefix = ['J', 'W', 'B'].includes(unit) ? autoPrefix(mean) : '';
  const f = prefixFactor(prefix);
  const spread = Number.isFinite(std) ? ` ± ${(std / f).toFixed(2)}` : '';
  return `${(mean / f).toFixed(2)}${spread} ${prefix}${unit}`.trimEnd();
}
