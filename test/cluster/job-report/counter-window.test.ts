import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CounterSample, counterWindowEnergy } from '../../../src/cluster/job-report/counter-window.js';

/** Samples of a counter growing at `watts` from `t0` every `step` s up to `t1`, from value `v0`. */
function ramp(t0: number, t1: number, step: number, watts: number, v0 = 0): CounterSample[] {
  const out: CounterSample[] = [];
  for (let t = t0; t <= t1 + 1e-9; t += step) out.push({ t, v: v0 + watts * (t - t0) });
  return out;
}

describe('counterWindowEnergy', () => {
  it('interpolates the window ends inside their segments', () => {
    const e = counterWindowEnergy(ramp(0, 100, 10, 5), 12, 47);
    assert.ok(Math.abs(e.joules - 5 * 35) < 1e-9, String(e.joules));
    assert.equal(e.coveredS, 35);
    assert.deepEqual(e.gaps, []);
  });

  it('counts a counter restart as Prometheus does and states the segment as a gap', () => {
    // The exporter restarted between t=40 and t=50: at t=50 it has counted 20 J since its start.
    const samples = [...ramp(0, 40, 10, 5, 1000), ...ramp(50, 100, 10, 5, 20)];
    const e = counterWindowEnergy(samples, 0, 100);
    assert.equal(e.joules, 5 * 40 + 20 + 5 * 50);
    assert.deepEqual(e.gaps, [{ kind: 'restart', start: 40, end: 50 }]);
    assert.equal(e.coveredS, 90);
  });

  it('bridges missed scrapes when the counter kept counting, and says so', () => {
    const samples = ramp(0, 100, 10, 5).filter((s) => s.t < 35 || s.t > 65);
    const e = counterWindowEnergy(samples, 0, 100);
    assert.ok(Math.abs(e.joules - 500) < 1e-9);
    assert.deepEqual(e.gaps, [{ kind: 'bridged', start: 30, end: 70 }]);
    assert.equal(e.coveredS, 100);
  });

  it('states window parts without samples as no-data, never as zero energy', () => {
    const e = counterWindowEnergy(ramp(30, 80, 10, 5), 0, 100);
    assert.equal(e.joules, 250);
    assert.deepEqual(e.gaps, [
      { kind: 'no-data', start: 0, end: 30 },
      { kind: 'no-data', start: 80, end: 100 },
    ]);
    assert.equal(e.coveredS, 50);
    const none = counterWindowEnergy([], 0, 100);
    assert.ok(Number.isNaN(none.joules));
    assert.equal(none.coveredS, 0);
  });
});
