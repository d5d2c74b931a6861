import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { counterIncrease, counterSegments } from '../../src/platform/counter-segments.js';
import { amountWithin, covered, timeWeightedMean, total } from '../../src/platform/integration.js';

const close = (a: number, b: number, eps = 1e-6) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);

describe('counter energy', () => {
  it('is the sum of deltas, not a re-integrated power (perun toy example: 30 J, not 35 J)', () => {
    const r = counterSegments([0, 1, 2, 3], [0, 10, 30, 30]);
    close(total(r.segments), 30);
    assert.deepEqual(r.anomalies, []);
  });

  it('corrects a wrap with the known range', () => {
    // 100 J range: 90 → 99 → 4 (wrapped) → 10 = 9 + 5 + 6 = 20 J
    const r = counterSegments([0, 1, 2, 3], [90, 99, 4, 10], 100);
    close(total(r.segments), 20);
  });

  it('stays exact across NaN gaps: ΔE spans from the last good to the next good reading', () => {
    const r = counterSegments([0, 1, 2, 3, 4], [5, Number.NaN, Number.NaN, 17, 20]);
    close(total(r.segments), 15);
    close(covered(r.segments), 4);
    assert.deepEqual(
      [...r.segments].map((s) => [s.t0, s.t1]),
      [
        [0, 3],
        [3, 4],
      ],
    );
  });

  it('refuses a counter going backwards without a known range, and says so', () => {
    const r = counterSegments([0, 1, 2], [100, 50, 60]);
    assert.equal(r.anomalies.length, 1);
    assert.match(r.anomalies[0]!, /backwards/);
    // the reset is recognised on the next reading: 50 → 60 counts, 100 → 50 does not
    close(total(r.segments), 10);
  });

  it('handles irregular periods (energy does not depend on spacing)', () => {
    const times = [0, 0.01, 0.5, 0.51, 2.7];
    const values = [0, 1, 2, 3, 4];
    close(total(counterSegments(times, values).segments), 4);
    close(timeWeightedMean(counterSegments(times, values).segments), 4 / 2.7);
  });

  it('byte counters: last good minus first good, NaN without two readings', () => {
    assert.equal(counterIncrease([0, 1, 2], [1e12, Number.NaN, 1e12 + 4096]), 4096);
    assert.ok(Number.isNaN(counterIncrease([0, 1], [Number.NaN, 5])));
  });
});

describe('counter cuts', () => {
  it('cuts an interval: exact at readings, proportional inside a segment', () => {
    const segs = counterSegments([0, 1, 2], [0, 10, 30]).segments;
    close(amountWithin(segs, 0, 1).amount, 10);
    close(amountWithin(segs, 0.5, 1.5).amount, 5 + 10);
    close(amountWithin(segs, -5, 50).seconds, 2);
  });
});
