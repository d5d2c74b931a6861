import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AGGREGATION_NAMES,
  Aggregation,
  aggregate,
  aggregationName,
  parseAggregation,
  REGION_HASH_UNMARKED,
  REGION_HINT_UNKNOWN,
} from '../../src/platform/aggregation.js';

const NaN_ = Number.NaN;

// One row per function: [values, expected]. NaN inputs are filtered by all but select_first.
const CASES: Record<Aggregation, [number[], number][]> = {
  [Aggregation.Sum]: [
    [[1, 2, 3.5], 6.5],
    [[1, NaN_, 2], 3],
    [[NaN_, NaN_], NaN_],
    [[], NaN_],
  ],
  [Aggregation.Average]: [
    [[1, 2, 6], 3],
    [[4, NaN_], 4],
    [[NaN_], NaN_],
    [[], NaN_],
  ],
  [Aggregation.Median]: [
    [[5, 1, 3], 3],
    [[4, 1, 3, 2], 2.5],
    [[7, NaN_, 1], 4],
    [[], NaN_],
  ],
  [Aggregation.IntegerBitwiseOr]: [
    [[1, 2, 8], 11],
    [[0x10, NaN_, 0x01], 0x11],
    [[2 ** 40, 1], 2 ** 40 + 1],
    [[], NaN_],
  ],
  [Aggregation.LogicalAnd]: [
    [[1, 2, 3], 1],
    [[1, 0, 1], 0],
    [[1, NaN_], 1],
    [[], NaN_],
  ],
  [Aggregation.LogicalOr]: [
    [[0, 0, 5], 1],
    [[0, 0], 0],
    [[NaN_, 0], 0],
    [[], NaN_],
  ],
  [Aggregation.Min]: [
    [[3, -1, 2], -1],
    [[NaN_, 4, 5], 4],
    [[NaN_], NaN_],
    [[], NaN_],
  ],
  [Aggregation.Max]: [
    [[3, -1, 2], 3],
    [[NaN_, 4, 5], 5],
    [[NaN_], NaN_],
    [[], NaN_],
  ],
  [Aggregation.Stddev]: [
    // sample standard deviation (n - 1): values 2,4,4,4,5,5,7,9 have sample variance 32/7
    [[2, 4, 4, 4, 5, 5, 7, 9], Math.sqrt(32 / 7)],
    [[1, NaN_, 3], Math.SQRT2],
    [[5], NaN_],
    [[], NaN_],
  ],
  [Aggregation.RegionHash]: [
    [[0x1234, 0x1234], 0x1234],
    [[0x1234, 0x5678], REGION_HASH_UNMARKED],
    [[NaN_, 7], 7],
    [[], NaN_],
  ],
  [Aggregation.RegionHint]: [
    [[3, 3], 3],
    [[3, 4], REGION_HINT_UNKNOWN],
    [[NaN_, 3], 3],
    [[], NaN_],
  ],
  [Aggregation.SelectFirst]: [
    [[9, 1, 2], 9],
    [[NaN_, 1], NaN_],
    [[], NaN_],
  ],
  [Aggregation.ExpectSame]: [
    [[2, 2, 2], 2],
    [[2, 3], NaN_],
    [[NaN_, 2], 2],
    [[], NaN_],
  ],
};

describe('aggregation functions', () => {
  for (const [agg, rows] of Object.entries(CASES)) {
    const name = aggregationName(Number(agg) as Aggregation);
    it(`${name}: values, NaN and empty input`, () => {
      for (const [values, expected] of rows) {
        const got = aggregate(Number(agg) as Aggregation, values);
        if (Number.isNaN(expected)) assert.ok(Number.isNaN(got), `${name}(${values}) = ${got}, expected NaN`);
        else assert.ok(Math.abs(got - expected) < 1e-12, `${name}(${values}) = ${got}, expected ${expected}`);
      }
    });
  }

  it('covers all 13 functions, named in GEOPM order', () => {
    assert.equal(Object.keys(CASES).length, 13);
    assert.deepEqual(AGGREGATION_NAMES.slice(0, 3), ['sum', 'average', 'median']);
    for (const name of AGGREGATION_NAMES) assert.equal(aggregationName(parseAggregation(name)), name);
    assert.throws(() => parseAggregation('mean'), /unknown aggregation/);
    assert.throws(() => aggregate(99 as Aggregation, [1]), /invalid aggregation/);
  });

  it('min and max of more values than a call may take as arguments', () => {
    const values = Array.from({ length: 500_000 }, (_, i) => i - 1000);
    assert.equal(aggregate(Aggregation.Min, values), -1000);
    assert.equal(aggregate(Aggregation.Max, values), 498_999);
  });

  it('does not reorder the caller values (median sorts a copy)', () => {
    const values = [3, 1, 2];
    aggregate(Aggregation.Median, values);
    assert.deepEqual(values, [3, 1, 2]);
  });
});
