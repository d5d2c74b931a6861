import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stat } from '../../../src/monitor/model/round-stats.js';

const close = (a: number, b: number, eps = 1e-6) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);

describe('statistics over many calls', () => {
  it('handles a region called a million times (no argument spread to overflow the stack)', () => {
    const values = Array.from({ length: 1_000_000 }, (_, i) => (i % 1000) / 1000);
    values[500] = Number.NaN;
    const s = stat(values);
    assert.equal(s.min, 0);
    assert.equal(s.max, 0.999);
    close(s.mean, 0.4995, 1e-4);
  });
});
