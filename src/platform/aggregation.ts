import { summarize } from './statistics.js';

/**
 * Aggregation functions with GEOPM's enum order and NaN/empty rules (Agg.hpp); sum, average,
 * min, max and stddev are statistics.ts's rule.
 */
export enum Aggregation {
  Sum = 0,
  Average = 1,
  Median = 2,
  IntegerBitwiseOr = 3,
  LogicalAnd = 4,
  LogicalOr = 5,
  Min = 6,
  Max = 7,
  Stddev = 8,
  RegionHash = 9,
  RegionHint = 10,
  SelectFirst = 11,
  ExpectSame = 12,
}

export const AGGREGATION_NAMES: readonly string[] = [
  'sum',
  'average',
  'median',
  'integer_bitwise_or',
  'logical_and',
  'logical_or',
  'min',
  'max',
  'stddev',
  'region_hash',
  'region_hint',
  'select_first',
  'expect_same',
];

/** GEOPM_REGION_HASH_UNMARKED and GEOPM_REGION_HINT_UNKNOWN. */
export const REGION_HASH_UNMARKED = 0x725e8066;
export const REGION_HINT_UNKNOWN = 0;

export function aggregationName(agg: Aggregation): string {
  const name = AGGREGATION_NAMES[agg];
  if (name === undefined) throw new RangeError(`invalid aggregation: ${agg}`);
  return name;
}

export function parseAggregation(name: string): Aggregation {
  const idx = AGGREGATION_NAMES.indexOf(name);
  if (idx < 0) throw new RangeError(`unknown aggregation: ${name}`);
  return idx as Aggregation;
}

function finite(values: readonly number[]): number[] {
  return values.filter((v) => !Number.isNaN(v));
}

function commonOr(values: number[], fallback: number): number {
  if (values.length === 0) return Number.NaN;
  const first = values[0]!;
  return values.every((v) => v === first) ? first : fallback;
}

type AggFn = (values: readonly number[]) => number;

const FUNCTIONS: Record<Aggregation, AggFn> = {
  [Aggregation.Sum]: (vs) => summarize(vs).sum,
  [Aggregation.Average]: (vs) => summarize(vs).mean,
  [Aggregation.Median]: (vs) => {
    const f = finite(vs).sort((a, b) => a - b);
    if (f.length === 0) return Number.NaN;
    const mid = f.length >> 1;
    return f.length % 2 === 1 ? f[mid]! : (f[mid - 1]! + f[mid]!) / 2;
  },
  [Aggregation.IntegerBitwiseOr]: (vs) => {
    const f = finite(vs);
    if (f.length === 0) return Number.NaN;
    let acc = 0n;
    for (const v of f) acc |= BigInt.asUintN(64, BigInt(Math.trunc(v)));
    return Number(acc);
  },
  [Aggregation.LogicalAnd]: (vs) => {
    const f = finite(vs);
    return f.length === 0 ? Number.NaN : f.every((v) => v !== 0) ? 1 : 0;
  },
  [Aggregation.LogicalOr]: (vs) => {
    const f = finite(vs);
    return f.length === 0 ? Number.NaN : f.some((v) => v !== 0) ? 1 : 0;
  },
  [Aggregation.Min]: (vs) => summarize(vs).min,
  [Aggregation.Max]: (vs) => summarize(vs).max,
  [Aggregation.Stddev]: (vs) => summarize(vs).std,
  [Aggregation.RegionHash]: (vs) => commonOr(finite(vs), REGION_HASH_UNMARKED),
  [Aggregation.RegionHint]: (vs) => commonOr(finite(vs), REGION_HINT_UNKNOWN),
  // select_first is the one function that does not filter NaN: it reports the first value as is.
  [Aggregation.SelectFirst]: (vs) => (vs.length === 0 ? Number.NaN : vs[0]!),
  [Aggregation.ExpectSame]: (vs) => commonOr(finite(vs), Number.NaN),
};

export function aggregate(agg: Aggregation, values: readonly number[]): number {
  const fn = FUNCTIONS[agg];
  if (fn === undefined) throw new RangeError(`invalid aggregation: ${agg}`);
  return fn(values);
}
