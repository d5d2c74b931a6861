import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import {
  ClientPlacement,
  MOST_SAMPLES_BETWEEN_LOOKS,
  SAMPLES_BETWEEN_LOOKS,
} from '../../src/batch/placement.js';
import { allowedCpus, currentCpu, moveCurrentThreadTo } from '../../src/platform/cpu-affinity.js';
import { until } from '../helpers/poll.js';

// A batch server's look at where it runs (src/batch/placement.ts), made by this test's own
// thread for a real "client" process held on one CPU by taskset.

const cpus = allowedCpus();

/** A process that runs now and then (so its last CPU is its CPU), held on `cpu`. */
function clientOn(cpu: number) {
  const child = spawn('taskset', ['-c', String(cpu), 'sh', '-c', 'while :; do sleep 0.01; done'], {
    stdio: 'ignore',
    env: { PATH: '/usr/bin:/bin' },
  });
  return child;
}

describe("a batch server following its client's CPU", () => {
  test('moves next to the client, keeps its mask, and stays quiet once the client is gone', {
    skip: cpus.length < 2 && 'one CPU',
  }, async () => {
    const target = cpus.find((cpu) => cpu !== currentCpu())!;
    const client = clientOn(target);
    const logged: string[] = [];
    const placement = new ClientPlacement(client.pid!, (line) => logged.push(line));
    try {
      const elsewhere = cpus.find((cpu) => cpu !== target)!;
      // Each try starts away from the client (the kernel may move this thread meanwhile, and
      // the client's shell may not have run on its CPU yet at the first tries).
      await until(
        'a look moved this thread to the client',
        () => {
          moveCurrentThreadTo(elsewhere);
          return placement.follow() === 'moved' && currentCpu() === target;
        },
        30_000,
        10,
      );
      assert.ok(placement.moves >= 1);
      assert.deepEqual(allowedCpus(), cpus, 'the mask is as it was');
      // Together now: the next look finds it so, and keeps the shortest interval.
      await until('a look finds the two together', () => placement.follow() === 'together', 30_000, 10);
      assert.equal(placement.samplesBetweenLooks, SAMPLES_BETWEEN_LOOKS);
      assert.equal(placement.nativeLooks.every, SAMPLES_BETWEEN_LOOKS);
      assert.ok(placement.nativeLooks.stat >= 0, 'the stat file is open for the native loop');
    } finally {
      client.kill('SIGKILL');
      await new Promise((resolve) => client.once('exit', resolve));
    }
    // Gone (then reaped): the open stat file fails to read; no move, no error, nothing logged.
    const moves = placement.moves;
    placement.follow();
    placement.follow();
    assert.equal(placement.moves, moves);
    assert.deepEqual(logged, []);
    placement.close();
  });

  test('a client that is not there is not an error either', () => {
    const logged: string[] = [];
    // pid_max is at most 2^22: no process has this pid.
    const placement = new ClientPlacement(2 ** 22 + 1, (line) => logged.push(line));
    assert.equal(placement.follow(), 'unknown');
    assert.equal(placement.moves, 0);
    assert.deepEqual(logged, []);
    // Looks that cannot move the server grow further apart, to a bound.
    assert.equal(placement.samplesBetweenLooks, 2 * SAMPLES_BETWEEN_LOOKS);
    for (let i = 0; i < 20; i++) placement.follow();
    assert.equal(placement.samplesBetweenLooks, MOST_SAMPLES_BETWEEN_LOOKS);
    assert.equal(placement.nativeLooks.stat, -1, 'no stat file: the native loop does not look');
  });

  test('a move after looks that found the two together counts as held: the interval goes back', {
    skip: cpus.length < 2 && 'one CPU',
  }, async () => {
    const target = cpus.find((cpu) => cpu !== currentCpu())!;
    const elsewhere = cpus.find((cpu) => cpu !== target)!;
    const client = clientOn(target);
    const placement = new ClientPlacement(client.pid!, () => {});
    try {
      // Moves on back-to-back looks (as when the kernel undoes each): the interval doubles.
      await until(
        'two moves in a row',
        () => {
          moveCurrentThreadTo(elsewhere);
          placement.follow();
          return placement.samplesBetweenLooks > SAMPLES_BETWEEN_LOOKS;
        },
        30_000,
        10,
      );
      // A move after more than an interval of answers (the native loop's looks found them
      // together meanwhile): the interval is back at its start.
      await until(
        'a move that follows looks that held',
        () => {
          moveCurrentThreadTo(elsewhere);
          return placement.follow(10 * MOST_SAMPLES_BETWEEN_LOOKS) === 'moved';
        },
        30_000,
        10,
      );
      assert.equal(placement.samplesBetweenLooks, SAMPLES_BETWEEN_LOOKS);
    } finally {
      client.kill('SIGKILL');
      await new Promise((resolve) => client.once('exit', resolve));
      placement.close();
    }
  });
});
