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

test('runningEach answers for many handles at once: live, exited, a zombie and a closed handle', async () => {
  const live = spawn('sleep', ['60'], { stdio: 'ignore' });
  const dead = spawn('sleep', ['60'], { stdio: 'ignore' });
  const deadExit = once(dead, 'exit');
  const liveExit = once(live, 'exit');
  try {
    await Promise.all([once(live, 'spawn'), once(dead, 'spawn')]);
    const liveHandle = ProcessHandle.open(live.pid!, startTicksOf(live.pid!))!;
    const deadHandle = ProcessHandle.open(dead.pid!, startTicksOf(dead.pid!))!;
    const closed = ProcessHandle.open(live.pid!, startTicksOf(live.pid!))!;
    closed.close();
    assert.deepEqual(ProcessHandle.runningEach([liveHandle, deadHandle, closed, liveHandle]), [
      true,
      true,
      true,
      true,
    ]);
    dead.kill('SIGKILL');
    // Exited but not yet reaped (a zombie) first, then reaped: not running either way.
    await until(
      'the killed child seen as exited',
      () => !ProcessHandle.runningEach([deadHandle])[0],
      10_000,
      5,
    );
    assert.deepEqual(ProcessHandle.runningEach([liveHandle, deadHandle, closed]), [true, false, true]);
    await deadExit;
    assert.deepEqual(ProcessHandle.runningEach([deadHandle, liveHandle]), [false, true]);
    assert.deepEqual(ProcessHandle.runningEach([]), []);
    live.kill('SIGKILL');
    await liveExit;
    // The closed handle has no pidfd: /proc says the same.
    assert.deepEqual(ProcessHandle.runningEach([liveHandle, closed]), [false, false]);
    liveHandle.close();
    deadHandle.close();
  } finally {
    live.kill('SIGKILL');
    dead.kill('SIGKILL');
  }
});

test('pin reads a process through a pidfd opened first; facts then read its status and poll', async () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  const opened: ProcessHandle[] = [];
  try {
    await once(child, 'spawn');
    const before = pidfds();
    const pinned = ProcessHandle.pin(child.pid!, () => processIdentity(child.pid!));
    assert.ok(pinned, 'a live process is pinned');
    opened.push(pinned.handle);
    assert.equal(pinned.facts.startTicks, startTicksOf(child.pid!));
    assert.equal(pinned.handle.startTicks, pinned.facts.startTicks);
    assert.equal(pidfds(), before + 1);
    const facts = pinned.handle.facts();
    assert.deepEqual(
      { uid: facts?.uid, gid: facts?.gid, startTicks: facts?.startTicks },
      { uid: process.getuid!(), gid: process.getgid!(), startTicks: pinned.facts.startTicks },
    );
    assert.equal(typeof facts?.capEff, 'bigint');
    // Nothing read, or the read failed: no handle, and its pidfd is closed again.
    assert.equal(
      ProcessHandle.pin(child.pid!, () => undefined),
      undefined,
    );
    assert.throws(
      () =>
        ProcessHandle.pin(child.pid!, () => {
          throw new Error('unreadable');
        }),
      /unreadable/,
    );
    assert.equal(pidfds(), before + 1, 'a failed pin keeps no pidfd');
    child.kill('SIGKILL');
    await exited;
    assert.equal(pinned.handle.facts(), undefined, 'an exited process has no facts');
    const late = ProcessHandle.pin(child.pid!, () => ({ startTicks: 1 }));
    if (late) opened.push(late.handle);
    assert.equal(late, undefined, 'a process that exited is not pinned, whatever the read said');
    pinned.handle.close();
    assert.equal(pidfds(), before);
    for (const pid of [0, -1, 1.5])
      assert.equal(
        ProcessHandle.pin(pid, () => ({ startTicks: 0 })),
        undefined,
      );
  } finally {
    child.kill('SIGKILL');
    for (const handle of opened) handle.close();
  }
});

test('a duplicate has a pidfd of its own and outlives the original; none is made of an exited process', async () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  const opened: ProcessHandle[] = [];
  try {
    await once(child, 'spawn');
    const before = pidfds();
    const original = ProcessHandle.open(child.pid!, startTicksOf(child.pid!))!;
    const copy = original.duplicate();
    assert.ok(copy);
    opened.push(original, copy);
    assert.equal(pidfds(), before + 2);
    original.close();
    assert.equal(copy.running(), true, 'the copy does not depend on the original');
    assert.equal(pidfds(), before + 1);
    // A closed handle's copy is a handle of its own again, checked against the start time.
    const ofClosed = original.duplicate();
    assert.ok(ofClosed);
    opened.push(ofClosed);
    assert.equal(pidfds(), before + 2, 'with a pidfd, not /proc reads');
    ofClosed.close();
    child.kill('SIGKILL');
    await exited;
    assert.equal(copy.running(), false);
    const late = copy.duplicate();
    if (late) opened.push(late);
    assert.equal(late, undefined, 'no copy of an exited process');
    assert.equal(pidfds(), before + 1, 'the refused copy closed its pidfd');
    copy.close();
    assert.equal(pidfds(), before);
  } finally {
    child.kill('SIGKILL');
    for (const handle of opened) handle.close();
  }
});
