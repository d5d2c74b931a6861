import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  amountWithin,
  counterIncrease,
  counterSegments,
  covered,
  meanStd,
  stepSegments,
  timeWeightedMean,
  total,
  trapezoidSegments,
} from '../../src/monitor/energy.js';

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
      r.segments.map((s) => [s.t0, s.t1]),
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

describe('power integration', () => {
  it('integrates trapezoids over the actual timestamps', () => {
    // 10 W for 1 s, ramp 10→30 W over 3 s: 10 + 60 = 70 J
    const segs = trapezoidSegments([0, 1, 4], [10, 10, 30]);
    close(total(segs), 70);
    close(timeWeightedMean(segs), 70 / 4);
  });

  it('leaves no trapezoid across a gap and reports the hole as not covered', () => {
    const segs = trapezoidSegments([0, 1, 2, 3], [10, Number.NaN, 10, 10]);
    close(total(segs), 10);
    close(covered(segs), 1);
    close(timeWeightedMean(segs), 10);
  });

  it('a time-weighted mean differs from the sample mean for irregular samples', () => {
    const segs = trapezoidSegments([0, 0.1, 10], [100, 100, 0]);
    const weighted = timeWeightedMean(segs);
    close(weighted, (10 + 495) / 10);
    assert.notEqual(weighted.toFixed(3), (200 / 3).toFixed(3));
  });
});

describe('rate readings', () => {
  it('each utilisation reading covers the interval before it (irregular periods weigh in)', () => {
    const segs = stepSegments([0, 1, 4], [Number.NaN, 1, 0.5]);
    close(total(segs), 1 + 1.5);
    close(timeWeightedMean(segs), 2.5 / 4);
  });
});

describe('cuts and statistics', () => {
  it('cuts an interval: exact at readings, proportional inside a segment', () => {
    const segs = counterSegments([0, 1, 2], [0, 10, 30]).segments;
    close(amountWithin(segs, 0, 1).amount, 10);
    close(amountWithin(segs, 0.5, 1.5).amount, 5 + 10);
    close(amountWithin(segs, -5, 50).seconds, 2);
  });

  it('cuts with gaps between segments match a cut that looks at every segment', () => {
    // Readings every 0.1 s with failed (NaN) ones: segments with holes between them.
    const times = Array.from({ length: 200 }, (_, i) => i / 10);
    const values = times.map((t, i) => (i % 7 === 3 ? Number.NaN : 0.5 + 0.4 * Math.sin(t)));
    const segs = stepSegments(times, values);
    const everySegment = (a: number, b: number) => {
      let amount = 0;
      let seconds = 0;
      for (const x of segs) {
        const lo = Math.max(a, x.t0);
        const hi = Math.min(b, x.t1);
        if (hi > lo) {
          amount += (x.amount * (hi - lo)) / (x.t1 - x.t0);
          seconds += hi - lo;
        }
      }
      return { amount, seconds };
    };
    for (const [a, b] of [
      [-1, 0],
      [0, 0.05],
      [0.25, 0.25],
      [0.3, 0.4],
      [0.33, 7.77],
      [5, 5.35],
      [19.85, 25],
      [-3, 30],
    ] as const) {
      const got = amountWithin(segs, a, b);
      const want = everySegment(a, b);
      close(got.amount, want.amount, 1e-9);
      close(got.seconds, want.seconds, 1e-9);
    }
  });

  it('mean ± sample std', () => {
    const s = meanStd([1, 2, 3, 4]);
    close(s.mean, 2.5);
    close(s.std, Math.sqrt(5 / 3));
    assert.deepEqual(meanStd([7]), { mean: 7, std: 0 });
    assert.ok(Number.isNaN(meanStd([]).mean));
  });
});
