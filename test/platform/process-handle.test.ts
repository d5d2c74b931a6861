import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseStartTicks, processIdentity } from '../../src/platform/process.js';
import { ProcessHandle } from '../../src/platform/process-handle.js';
import { until } from '../helpers/poll.js';
import { openPidfds } from '../helpers/proc-stat.js';

const pidfds = openPidfds;

const startTicksOf = (pid: number) => processIdentity(pid)!.startTicks;

test('a handle says running until its process exits, with a pidfd of its own', async () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const before = pidfds();
  const handle = ProcessHandle.open(child.pid!, startTicksOf(child.pid!));
  assert.ok(handle, 'opened on a live process');
  assert.equal(pidfds(), before + 1, 'a pidfd, not /proc reads');
  assert.equal(handle.running(), true);
  assert.equal(handle.running(), true, 'asking again changes nothing');
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.equal(handle.running(), false);
  handle.close();
  assert.equal(pidfds(), before, 'close releases the pidfd');
});

test('a zombie is not running; a wrong start time or a pid that is not a process gives no handle', async () => {
  // `sh` forks a child that exits at once, then becomes `sleep`, which never waits for it.
  const parent = spawn('sh', ['-c', '(exit 0) & exec sleep 60'], { stdio: 'ignore' });
  try {
    const zombie = await until(
      'a zombie child',
      () => {
        const kids = readFileSync(`/proc/${parent.pid}/task/${parent.pid}/children`, 'utf8').trim();
        const pid = Number(kids.split(' ')[0]);
        return pid > 0 && /^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8')) && pid;
      },
      10_000,
      10,
    );
    const startTicks = parseStartTicks(readFileSync(`/proc/${zombie}/stat`, 'utf8'));
    assert.equal(ProcessHandle.open(zombie, startTicks), undefined, 'an exited process gets no handle');
  } finally {
    parent.kill('SIGKILL');
  }
  assert.equal(
    ProcessHandle.open(process.pid, startTicksOf(process.pid) + 1),
    undefined,
    'another start time',
  );
  for (const pid of [0, -1, 1.5]) assert.equal(ProcessHandle.open(pid, 0), undefined, `pid ${pid}`);
});
