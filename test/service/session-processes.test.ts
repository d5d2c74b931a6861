import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { processIdentity } from '../../src/platform/process.js';
import { ProcessHandle } from '../../src/platform/process-handle.js';
import { SessionProcesses } from '../../src/service/session-processes.js';
import { spyOnFs } from '../helpers/fs-spy.js';
import { openPidfds } from '../helpers/proc-stat.js';

const pidfds = openPidfds;

const startTicksOf = (pid: number) => processIdentity(pid)!.startTicks;

test('session processes: one handle per session, replaced for a recycled pid, closed when the session closes', async () => {
  const processes = new SessionProcesses();
  const before = pidfds();
  const me = startTicksOf(process.pid);
  assert.equal(processes.running(process.pid, me), true);
  assert.equal(processes.running(process.pid, me), true);
  assert.equal(processes.size, 1);
  assert.equal(pidfds(), before + 1);
  // The same pid with another start time is another process: not running, and the handle goes.
  assert.equal(processes.running(process.pid, me + 1), false);
  assert.equal(processes.size, 0);
  assert.equal(pidfds(), before);
  assert.equal(processes.running(process.pid, me), true);
  processes.forget(process.pid);
  assert.equal(processes.size, 0);
  assert.equal(pidfds(), before);
});

test('session processes: isSame is the same process with the same uid and gid, and not once it has exited', async () => {
  const processes = new SessionProcesses();
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  try {
    await once(child, 'spawn');
    const identity = processIdentity(child.pid!)!;
    assert.equal(processes.isSame(identity), true);
    assert.equal(processes.size, 1, 'the first question opens the handle later ones poll');
    assert.equal(processes.isSame(identity), true);
    assert.equal(processes.isSame({ ...identity, uid: identity.uid + 1 }), false, 'another uid');
    assert.equal(processes.isSame({ ...identity, gid: identity.gid + 1 }), false, 'another gid');
    child.kill('SIGKILL');
    // Not yet reaped: a zombie has exited all the same.
    while (processes.isSame(identity)) await new Promise((resolve) => setTimeout(resolve, 5));
    await exited;
    assert.equal(processes.isSame(identity), false, 'reaped');
  } finally {
    child.kill('SIGKILL');
    processes.forget(child.pid!);
  }
});

test('session processes: isSame never passes a later process on a recycled pid (another start time)', () => {
  const processes = new SessionProcesses();
  const me = processIdentity(process.pid)!;
  assert.equal(processes.isSame({ ...me, startTicks: me.startTicks - 1 }), false);
  assert.equal(processes.isSame(me), true);
  processes.forget(process.pid);
});

test('session processes: questions of one turn are answered together, each from after it was asked', async () => {
  const processes = new SessionProcesses();
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    await once(child, 'spawn');
    const me = processIdentity(process.pid)!;
    const it = processIdentity(child.pid!)!;
    const answers = [
      processes.runningSoon(me.pid, me.startTicks),
      processes.runningSoon(it.pid, it.startTicks),
      processes.runningSoon(it.pid, it.startTicks + 1),
    ];
    assert.equal(processes.size, 1, 'the wrong start time opened nothing (and dropped no handle)');
    assert.deepEqual(await Promise.all(answers), [true, true, false]);
    // Asked, then the process exits before the turn ends (the event loop blocked until it has):
    // the answer is from the end of the turn, after the question.
    const late = processes.runningSoon(it.pid, it.startTicks);
    const killed = spawnSync('sh', [
      '-c',
      `kill -9 ${it.pid}; while grep -q '^State:[[:space:]]*[RSDT]' /proc/${it.pid}/status 2>/dev/null; do :; done`,
    ]);
    assert.equal(killed.status, 0);
    assert.equal(await late, false);
    assert.equal(await processes.runningSoon(it.pid, it.startTicks), false);
    // A handle forgotten between question and answer is answered from /proc.
    const forgotten = processes.runningSoon(me.pid, me.startTicks);
    processes.forget(me.pid);
    assert.equal(await forgotten, true);
  } finally {
    child.kill('SIGKILL');
    processes.forget(child.pid!);
    processes.forget(process.pid);
  }
});

test('session processes: an adopted handle is a copy, kept once, asked with no /proc read', async () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  const processes = new SessionProcesses();
  let caller: ProcessHandle | undefined;
  try {
    await once(child, 'spawn');
    const before = pidfds();
    caller = ProcessHandle.open(child.pid!, startTicksOf(child.pid!))!;
    processes.adopt(caller);
    processes.adopt(caller); // again: kept, not copied twice
    assert.equal(pidfds(), before + 2, "the caller's and one copy");
    caller.close();
    const startTicks = caller.startTicks;
    const reads = await spyOnFs('openSync', async () => {
      assert.equal(processes.running(child.pid!, startTicks), true);
    });
    assert.deepEqual(reads, [], 'the copy is asked, not /proc');
    child.kill('SIGKILL');
    await exited;
    assert.equal(processes.running(child.pid!, startTicks), false);
    processes.forget(child.pid!);
    assert.equal(pidfds(), before);
  } finally {
    child.kill('SIGKILL');
    caller?.close();
    processes.forget(child.pid!);
  }
});
