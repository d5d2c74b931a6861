import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  amountWithin,
  covered,
  RunningIntegral,
  Segments,
  step,
  stepSegments,
  timeWeightedMean,
  total,
  trapezoid,
  trapezoidSegments,
} from '../../src/platform/integration.js';

const close = (a: number, b: number, eps = 1e-6) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);

describe('one interval', () => {
  it('trapezoid and step: exact areas; NaN for a gap at either end or when time does not advance', () => {
    assert.equal(trapezoid(1, 10, 3, 30), 40);
    assert.equal(step(1, 3, 30), 60);
    for (const area of [
      trapezoid(0, Number.NaN, 1, 5),
      trapezoid(0, 5, 1, Number.NaN),
      trapezoid(1, 5, 1, 5),
      trapezoid(2, 5, 1, 5),
      step(0, 1, Number.NaN),
      step(1, 1, 5),
    ]) {
      assert.ok(Number.isNaN(area), `${area} should be NaN`);
    }
    assert.equal(step(0, 1, 0), 0, 'a real 0 stays 0');
  });
});

describe('segments as columns', () => {
  it('keep every pushed interval in order as they grow past their first capacity', () => {
    const segs = new Segments();
    for (let i = 0; i < 1000; i++) segs.push(i, i + 1, i * 0.5);
    assert.equal(segs.length, 1000);
    assert.deepEqual([segs.t0(999), segs.t1(999), segs.amount(999)], [999, 1000, 499.5]);
    assert.deepEqual([...segs][64], { t0: 64, t1: 65, amount: 32 });
    assert.equal([...segs].length, 1000);
    close(total(segs), 0.5 * ((999 * 1000) / 2));
    assert.equal(covered(segs), 1000);
    assert.deepEqual(amountWithin(segs, 10.5, 12), { amount: 5 * 0.5 + 5.5, seconds: 1.5 });
    assert.equal(new Segments().length, 0);
    assert.ok(Number.isNaN(timeWeightedMean(new Segments())));
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

describe('cuts at region edges', () => {
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
});

describe('running integral (a counter derived from power)', () => {
  it('adds trapezoids as readings arrive, from a given start amount', () => {
    const i = new RunningIntegral({ time: 0, value: 10, amount: 5 });
    assert.equal(i.add(1, 10), 15);
    assert.equal(i.add(4, 30), 15 + 60);
  });

  it('a gap reads as NaN, never 0 W; the next good reading spans the gap', () => {
    const i = new RunningIntegral({ time: 0, value: 100, amount: 0 });
    assert.equal(i.add(1, 100), 100);
    assert.ok(Number.isNaN(i.add(2, Number.NaN)));
    // 100 W from t=1 to t=3 across the failed read: 200 J more, as the counter kept counting.
    assert.equal(i.add(3, 100), 300);
  });

  it('no start reading: the first one only sets the base; time standing still adds nothing', () => {
    const i = new RunningIntegral({ time: 0, value: Number.NaN, amount: 7 });
    assert.equal(i.add(1, 50), 7);
    assert.equal(i.add(1, 60), 7);
    assert.equal(i.add(2, 60), 7 + 60);
  });
});
