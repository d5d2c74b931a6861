import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SessionStats } from '../../src/cli/session/report.js';
import { stat } from '../../src/monitor/model/round-stats.js';
import { Aggregation, aggregate } from '../../src/platform/aggregation.js';
import { RunningStats, summarize } from '../../src/platform/statistics.js';

const close = (a: number, b: number, eps = 1e-12) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);
const nan = (v: number, what: string) => assert.ok(Number.isNaN(v), `${what} = ${v}, expected NaN`);

describe('statistics: one rule', () => {
  it('mean and sample standard deviation (n − 1)', () => {
    const s = summarize([2, 4, 4, 4, 5, 5, 7, 9]);
    assert.equal(s.mean, 5);
    close(s.std, Math.sqrt(32 / 7));
    assert.deepEqual([s.count, s.sum, s.min, s.max, s.first, s.last], [8, 40, 2, 9, 2, 9]);
  });

  it('NaN is a missing value: skipped and not counted, never 0', () => {
    const s = summarize([Number.NaN, 1, Number.NaN, 3]);
    assert.deepEqual([s.count, s.first, s.last, s.sum, s.mean], [2, 1, 3, 4, 2]);
    close(s.std, Math.SQRT2);
  });

  it('one value: its mean, std NaN (the spread of one measurement is unknown, not 0)', () => {
    const s = summarize([7]);
    assert.deepEqual([s.count, s.mean, s.min, s.max, s.sum], [1, 7, 7, 7, 7]);
    nan(s.std, 'std of one value');
  });

  it('no values (or only NaN): everything NaN, count 0', () => {
    for (const values of [[], [Number.NaN, Number.NaN]]) {
      const s = summarize(values);
      assert.equal(s.count, 0);
      for (const k of ['first', 'last', 'min', 'max', 'sum', 'mean', 'std'] as const) nan(s[k], k);
    }
  });

  it('streaming gives what the list gives, and stays accurate for large values with a small spread', () => {
    const base = 1e6;
    const values = Array.from({ length: 1000 }, (_, i) => base + (i % 10) * 1e-3);
    const running = new RunningStats();
    for (const v of values) running.add(v);
    assert.deepEqual(running.summary(), summarize(values));
    // Reference: two passes over the offsets (v − base is exact this close to base).
    const offsets = values.map((v) => v - base);
    const m = offsets.reduce((a, b) => a + b, 0) / offsets.length;
    const exact = Math.sqrt(offsets.reduce((a, x) => a + (x - m) ** 2, 0) / (offsets.length - 1));
    close(running.summary().std, exact, exact * 1e-6);
    // The one-pass sum-of-squares formula cancels catastrophically here.
    const squares = values.reduce((a, v) => a + v * v, 0);
    const naive = Math.sqrt(Math.abs(squares - values.length * (base + m) ** 2) / (values.length - 1));
    assert.ok(Math.abs(naive - exact) > 1e-4, `naive ${naive} vs ${exact}`);
  });
});

describe('statistics: every caller follows the rule', () => {
  const values = [3, Number.NaN, 5, 10];
  const want = summarize(values);

  it('GEOPM aggregation: sum, average, min, max and stddev', () => {
    assert.equal(aggregate(Aggregation.Sum, values), want.sum);
    assert.equal(aggregate(Aggregation.Average, values), want.mean);
    assert.equal(aggregate(Aggregation.Min, values), want.min);
    assert.equal(aggregate(Aggregation.Max, values), want.max);
    assert.equal(aggregate(Aggregation.Stddev, values), want.std);
    nan(aggregate(Aggregation.Stddev, [4]), 'stddev of one value');
  });

  it('the geopmsession report: per-metric mean and std', () => {
    const session = new SessionStats(['A'], 'h');
    values.forEach((v, i) => {
      session.update(i, [v], () => '');
    });
    const m = session.report().metrics[0]!;
    assert.deepEqual([m.count, m.mean, m.std, m.min, m.max], [3, want.mean, want.std, want.min, want.max]);
  });

  it('the monitor across rounds and calls (±Infinity counts as missing too)', () => {
    const s = stat([...values, Number.POSITIVE_INFINITY]);
    assert.deepEqual(s, { mean: want.mean, std: want.std, min: want.min, max: want.max, sum: want.sum });
    nan(stat([42]).std, 'std of one round');
  });
});
