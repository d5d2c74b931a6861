import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { ClientPlacement } from '../../src/batch/placement.js';
import { allowedCpus, currentCpu } from '../../src/platform/cpu-affinity.js';
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
  test('moves next to the client once, keeps its mask, and stays quiet once the client is gone', {
    skip: cpus.length < 2 && 'one CPU',
  }, async () => {
    const target = cpus.find((cpu) => cpu !== currentCpu())!;
    const client = clientOn(target);
    const logged: string[] = [];
    const placement = new ClientPlacement(client.pid!, (line) => logged.push(line));
    try {
      let looked = 0;
      // The first looks may come before taskset has exec'd its shell on the CPU.
      await until(
        'the look moved this thread to the client',
        () => {
          placement.follow();
          looked++;
          return currentCpu() === target;
        },
        30_000,
        10,
      );
      assert.ok(
        placement.moves >= 1 && placement.moves <= looked,
        `${placement.moves} moves in ${looked} looks`,
      );
      assert.deepEqual(allowedCpus(), cpus, 'the mask is as it was');
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
    placement.follow();
    assert.equal(placement.moves, 0);
    assert.deepEqual(logged, []);
  });
});
