import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { allowedCpus, currentCpu, moveCurrentThreadTo } from '../../src/platform/cpu-affinity.js';

// The calling thread's one-time move (a batch server following its client): the thread lands
// on the CPU asked for and keeps the CPU mask it had; a CPU outside the mask is refused.

const cpus = allowedCpus();

describe('moving the calling thread to a CPU', () => {
  test('lands there and keeps its mask', () => {
    assert.ok(cpus.length >= 1, 'this thread may run somewhere');
    for (const target of cpus.slice(0, 4)) {
      // Right after the move the thread is there; the load balancer may move it later, so
      // one of a few tries seeing it there is the proof (a busy machine).
      let landed = false;
      for (let attempt = 0; attempt < 5 && !landed; attempt++) {
        assert.equal(moveCurrentThreadTo(target), 'moved');
        landed = currentCpu() === target;
      }
      assert.ok(landed, `never seen on CPU ${target}`);
      assert.deepEqual(allowedCpus(), cpus, 'the mask is as it was');
    }
  });

  test('a CPU the mask does not allow is refused, the thread left alone', () => {
    const outside = Math.max(...cpus) + 1;
    assert.equal(moveCurrentThreadTo(outside), 'not allowed');
    assert.equal(moveCurrentThreadTo(-1), 'not allowed');
    assert.deepEqual(allowedCpus(), cpus);
  });

  test('a thread confined by taskset is not moved out of it', { skip: cpus.length < 2 && 'one CPU' }, () => {
    const [inside, other] = cpus as [number, number];
    const code = [
      `import { allowedCpus, moveCurrentThreadTo } from ${JSON.stringify(new URL('../../src/platform/cpu-affinity.ts', import.meta.url).pathname)};`,
      `console.log(JSON.stringify([moveCurrentThreadTo(${other}), moveCurrentThreadTo(${inside}), allowedCpus()]));`,
    ].join('\n');
    const r = spawnSync(
      'taskset',
      ['-c', String(inside), process.execPath, '--import', 'tsx', '--input-type=module', '-e', code],
      { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), ['not allowed', 'moved', [inside]]);
  });
});
