import assert from 'node:assert/strict';
import { test } from 'node:test';
import { abortableSleep, type LoopClock, runTimedLoop } from '../../../src/cli/session/loop.js';

/** A clock that only moves when the loop sleeps or the body says it spent time. */
function manualClock(): LoopClock & { t: number; sleeps: number[] } {
  const clock = {
    t: 100,
    sleeps: [] as number[],
    now: () => clock.t,
    sleep: async (s: number) => {
      clock.sleeps.push(s);
      clock.t += s;
    },
  };
  return clock;
}

test('numPeriod + 1 iterations, the first at once, deadlines at start + k × period', async () => {
  const clock = manualClock();
  const starts: number[] = [];
  const n = await runTimedLoop({ period: 0.1, numPeriod: 10, clock }, (idx) => {
    starts.push(clock.t);
    assert.equal(idx, starts.length - 1);
    clock.t += 0.03; // work in the body must not push later deadlines back
    return true;
  });
  assert.equal(n, 11);
  for (const [k, t] of starts.entries())
    assert.ok(Math.abs(t - (100 + k * 0.1)) < 1e-9, `iteration ${k} at ${t}`);
  assert.equal(clock.sleeps.length, 10);
  for (const s of clock.sleeps) assert.ok(Math.abs(s - 0.07) < 1e-9);
});

test('a late iteration runs without sleeping and the schedule catches up', async () => {
  const clock = manualClock();
  const starts: number[] = [];
  await runTimedLoop({ period: 1, numPeriod: 4, clock }, (idx) => {
    starts.push(clock.t);
    if (idx === 1) clock.t += 2.5; // overruns the deadlines of iterations 2 and 3: both run at once
    return true;
  });
  assert.deepEqual(
    starts.map((t) => Math.round((t - 100) * 1000) / 1000),
    [0, 1, 3.5, 3.5, 4],
  );
});

test('body returning false stops; an aborted signal stops before the next iteration', async () => {
  const clock = manualClock();
  assert.equal(await runTimedLoop({ period: 1, numPeriod: 9, clock }, (idx) => idx < 2), 3);
  const controller = new AbortController();
  const n = await runTimedLoop(
    { period: 1, numPeriod: undefined, clock, signal: controller.signal },
    (idx) => {
      if (idx === 4) controller.abort();
      return true;
    },
  );
  assert.equal(n, 5);
});

test('abortable sleep resolves early when aborted', async () => {
  const controller = new AbortController();
  const pending = abortableSleep(3600, controller.signal);
  controller.abort();
  await pending; // would hang the test for an hour if the abort were ignored
  await abortableSleep(10, controller.signal);
});
