import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stat } from '../../src/monitor/model/round-stats.js';
import { meanStdUnit } from '../../src/report/units.js';

test('mean ± std with one shared prefix; a single value shows no spread (its std is NaN, not 0)', () => {
  const two = stat([1400, 1600]);
  assert.equal(meanStdUnit(two.mean, two.std, 'J'), '1.50 ± 0.14 kJ');
  const one = stat([1.5]);
  assert.ok(Number.isNaN(one.std));
  assert.equal(meanStdUnit(one.mean, one.std, 's'), '1.50 s');
  assert.equal(meanStdUnit(Number.NaN, 0, 'W'), 'n/a');
});
