import assert from 'node:assert/strict';
import { test } from 'node:test';
import { averagePower, WrappingCounter } from '../../src/platform/energy-counter.js';

const RANGE = 262143328850n; // max_energy_range_uj of the Intel fixture
const MODULUS = RANGE + 1n;

test('energy summed across several scripted wraps equals the true energy to the µJ', () => {
  const counter = new WrappingCounter(MODULUS);
  const start = 262000000000n; // close to the top: the first step already wraps
  // Steps of varying size (all under half a wrap) that cross the wrap point four times.
  const steps = [
    130000000000n,
    130000000001n,
    7n,
    99999999999n,
    123456789012n,
    130000000000n,
    1n,
    129999999999n,
  ];
  let truth = start;
  let update = counter.feed(start);
  for (const step of steps) {
    truth += step;
    update = counter.feed(truth % MODULUS);
    assert.equal(update.anomaly, undefined);
  }
  assert.ok(counter.wrapCount >= 3, `only ${counter.wrapCount} wraps scripted`);
  assert.equal(update.total, truth);
  // Joules as the backends publish them round-trip to the exact µJ.
  assert.equal(Math.round((Number(update.total) / 1e6) * 1e6), Number(truth));
});

test('a counter that goes backwards by less than a plausible wrap is reported and adds no energy', () => {
  const counter = new WrappingCounter(MODULUS);
  counter.feed(5000000n);
  const back = counter.feed(4000000n);
  assert.equal(back.anomaly?.kind, 'backwards');
  assert.match(back.anomaly!.message, /went backwards by 1000000/);
  assert.equal(back.total, 5000000n);
  // Returning to the old track counts only what is new since the last good reading.
  assert.equal(counter.feed(5000100n).total, 5000100n);
});

test('a counter reset is counted from its new base once a second reading confirms it', () => {
  const counter = new WrappingCounter(MODULUS);
  counter.feed(90000000000n);
  assert.ok(counter.feed(10n).anomaly);
  const after = counter.feed(1010n);
  assert.equal(after.anomaly, undefined);
  assert.equal(after.total, 90000000000n + 1000n);
});

test('readings outside the counter range are refused', () => {
  const counter = new WrappingCounter(16n);
  counter.feed(3n);
  const r = counter.feed(16n);
  assert.equal(r.anomaly?.kind, 'out_of_range');
  assert.equal(r.total, 3n);
  assert.throws(() => new WrappingCounter(1n), /modulus/);
});

test('64-bit counters wrap exactly', () => {
  const counter = new WrappingCounter(1n << 64n);
  counter.feed((1n << 64n) - 10n);
  assert.equal(counter.feed(5n).total, (1n << 64n) + 5n);
});

test('average power is exact for scripted samples and NaN when a sample is missing', () => {
  assert.equal(averagePower(100, 1, 250, 2.5), 100);
  assert.ok(Number.isNaN(averagePower(Number.NaN, 1, 250, 2)));
  assert.ok(Number.isNaN(averagePower(100, 2, 250, 2)));
});
