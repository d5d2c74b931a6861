import assert from 'node:assert/strict';
import { test } from 'node:test';
import { processIdentity } from '../../src/platform/process.js';
import { SessionProcesses } from '../../src/service/session-processes.js';
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
