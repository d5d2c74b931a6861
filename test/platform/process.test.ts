import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  isRunning,
  isSameProcess,
  parseStartTicks,
  parseStatus,
  parseUptimeCentiseconds,
  processExists,
  processIdentity,
  readProc,
  ticksSinceBoot,
} from '../../src/platform/process.js';
import { run } from '../helpers/cli.js';
import { needsTestUsers } from '../helpers/requirements.js';
import { asUser, ensureUser } from '../helpers/users.js';

const PROCESS_JS = new URL('../../dist/platform/process.js', import.meta.url).pathname;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('processExists: live processes yes; gone, zombie and non-pids no', async () => {
  assert.equal(processExists(process.pid), true);
  assert.equal(processExists(1), true, 'init exists whoever asks');
  for (const pid of [0, -1, 1.5, Number.NaN]) assert.equal(processExists(pid), false, `pid ${pid}`);
  const reaped = spawnSync('true').pid!;
  assert.equal(processExists(reaped), false);

  // A child whose parent never waits for it stays a zombie: `sh` forks, then becomes `sleep`.
  const parent = spawn('sh', ['-c', '(exit 0) & exec sleep 5'], { stdio: 'ignore' });
  try {
    let zombie = 0;
    for (let i = 0; i < 100 && zombie === 0; i++) {
      await sleep(20);
      const kids = readFileSync(`/proc/${parent.pid}/task/${parent.pid}/children`, 'utf8').trim();
      const pid = Number(kids.split(' ')[0]);
      if (pid > 0 && /^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))) zombie = pid;
    }
    assert.ok(zombie > 0, 'made a zombie');
    assert.equal(processExists(zombie), false, 'a zombie has exited');
    assert.equal(processIdentity(zombie), undefined);
    assert.equal(isRunning(zombie, parseStartTicks(readFileSync(`/proc/${zombie}/stat`, 'utf8'))), false);
    const me = processIdentity(process.pid)!;
    assert.equal(isSameProcess(me), true);
    assert.equal(
      isSameProcess({ ...me, startTicks: me.startTicks + 1 }),
      false,
      'another process on this pid',
    );
  } finally {
    parent.kill();
  }
});

test('start time is field 22 even when the command name has spaces and parentheses', () => {
  const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
  fields[19] = '123456'; // field 22
  assert.equal(parseStartTicks(`4242 (a) b (c)) ${fields.join(' ')}`), 123456);
});

test('status parsing takes effective uid/gid and CapEff', () => {
  const s = parseStatus('Name:\tx\nUid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nCapEff:\t0000000000200000\n');
  assert.deepEqual(s, { uid: 2, gid: 6, capEff: 0x200000n });
});

test('isRunning: this process yes; another start time, a reaped pid and non-pids no', () => {
  const me = processIdentity(process.pid)!;
  assert.equal(isRunning(process.pid, me.startTicks), true);
  assert.equal(isRunning(process.pid, me.startTicks + 1), false);
  const reaped = spawnSync('true').pid!;
  assert.equal(isRunning(reaped, 0), false);
  for (const pid of [0, -1, 1.5]) assert.equal(isRunning(pid, 0), false, `pid ${pid}`);
});

test('ticksSinceBoot reads the clock /proc/uptime shows, truncated the same way', () => {
  // Clock ticks are 100 a second on every Linux platform joulegate runs on (USER_HZ).
  const uptime = () => parseUptimeCentiseconds(readFileSync('/proc/uptime', 'utf8'));
  for (let i = 0; i < 20; i++) {
    const before = uptime();
    const now = ticksSinceBoot();
    const after = uptime();
    assert.ok(before <= now && now <= after, `uptime ${before}..${after}, ticksSinceBoot ${now}`);
  }
});

test('parseUptimeCentiseconds: whole and partial fractions, no fraction', () => {
  assert.equal(parseUptimeCentiseconds('12345.67 999.00\n'), 1234567);
  assert.equal(parseUptimeCentiseconds('12.5 1.0'), 1250);
  assert.equal(parseUptimeCentiseconds('7 1'), 700);
});

test('ticksSinceBoot is the clock of process start times: a process started later shows a later start', async () => {
  const before = ticksSinceBoot();
  assert.ok(processIdentity(process.pid)!.startTicks <= before);
  // Two ticks on, so a start in the same 1/100 s as `before` cannot be mistaken for one after.
  while (ticksSinceBoot() < before + 2) await sleep(5);
  const child = spawn('sleep', ['5'], { stdio: 'ignore' });
  try {
    await once(child, 'spawn');
    const started = processIdentity(child.pid!)!.startTicks;
    assert.ok(started > before, `started at ${started}, not after ${before}`);
    assert.ok(started <= ticksSinceBoot());
  } finally {
    child.kill();
  }
});

test('status parsing finds fields at the start of the text and refuses what is malformed', () => {
  assert.deepEqual(parseStatus('Uid:\t0\t7\t0\t0\nGid:\t0\t8\t0\t0\nCapEff:\t000001ffffffffff'), {
    uid: 7,
    gid: 8,
    capEff: 0x1ffffffffffn,
  });
  // A field whose name ends like another's is not that field.
  const lookalike = 'Name:\tx\nRUid:\t9\t9\t9\t9\nUid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nCapEff:\t0\n';
  assert.equal(parseStatus(lookalike).uid, 2);
  for (const bad of [
    'Uid:\t1\t2\t3\t4\nCapEff:\t0\n',
    'Uid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nCapEff:\tzz\n',
    'Uid:\t1\nGid:\t5\t6\t7\t8\nCapEff:\t0\n',
  ]) {
    assert.throws(() => parseStatus(bad), /malformed \/proc status/, JSON.stringify(bad));
  }
});

test('readProc returns the whole text of a /proc file longer than its first buffer', async () => {
  const big = 'x'.repeat(20_000);
  const child = spawn('sleep', ['60'], { stdio: 'ignore', env: { BIG: big } });
  try {
    await once(child, 'spawn');
    const text = readProc(child.pid!, 'environ');
    assert.equal(text, readFileSync(`/proc/${child.pid}/environ`, 'latin1'));
    assert.ok(text!.includes(`BIG=${big}`));
  } finally {
    child.kill('SIGKILL');
  }
  assert.equal(readProc(spawnSync('true').pid!, 'status'), undefined, 'a reaped process');
  for (const pid of [0, -1, 1.5]) assert.equal(readProc(pid, 'status'), undefined);
});

test('a /proc file that is refused is a permission error naming it, not a process that exited', {
  skip: needsTestUsers(),
}, async () => {
  // An unprivileged user may not read another user's environ (as hidepid refuses status): the
  // reader says so, and processExists still finds the process kill(2) found.
  const script = `import { readProc, processExists } from '${PROCESS_JS}';
let refused;
try { readProc(1, 'environ'); refused = 'read'; } catch (err) { refused = err.name + ': ' + err.message; }
console.log(JSON.stringify({ refused, exists: processExists(1) }));`;
  const user = ensureUser('joulegate-proc');
  const r = await run('env', [process.execPath, '--input-type=module', '-e', script], {
    prefix: asUser(user),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), {
    refused: 'PermissionError: /proc/1/environ: permission denied',
    exists: true,
  });
});
