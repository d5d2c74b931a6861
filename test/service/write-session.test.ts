import assert from 'node:assert/strict';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { ERROR_NAMES } from '../../src/ipc/dbus/interface.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { ensureUser } from '../helpers/users.js';
import { ServiceHarness, STRICT_ANSWERS, waitFor } from './harness.js';

const skip = needsDaemon();

const h = new ServiceHarness(STRICT_ANSWERS);
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());

const writer = whenMet(skip, () => ensureUser('jgsvc_writer'));
const other = whenMet(skip, () => ensureUser('jgsvc_writer2'));
await whenMet(skip, () =>
  h.client([
    { call: 'platformSetGroupAccess', args: ['', ['FILECTL::COUNTER'], ['FILECTL::LIMIT', 'FILECTL::MODE']] },
  ]),
);

const writeLimit = (value: number) => [
  { call: 'platformOpenSession' },
  { call: 'platformWriteControl', args: ['FILECTL::LIMIT', 1, 0, value] },
];
const lockHolder = () => readFileSync(join(h.runDir, 'CONTROL_LOCK'), 'utf8').trim();

test('killing the writer session leader (kill -9) restores controls within 2 s', { skip }, async (t) => {
  const held = await h.heldClient(writeLimit(55), { user: writer, leaderShell: true });
  assert.equal(held.results[1]!.ok, true, held.results[1]!.message);
  assert.equal(h.control('FILECTL-LIMIT-0'), '55');
  const leader = held.process.pid!;
  // The write lock belongs to the shell that leads the client's Unix session.
  assert.equal(lockHolder(), String(leader));
  const killedAt = Date.now();
  process.kill(leader, 'SIGKILL');
  const restored = await waitFor(() => h.control('FILECTL-LIMIT-0') === '100' && lockHolder() === '', 10_000);
  const ms = Date.now() - killedAt;
  assert.ok(restored, h.daemonLog);
  t.diagnostic(`restored ${ms} ms after kill -9 of the leader`);
  assert.ok(ms < 2000, `restored after ${ms} ms`);
  assert.equal(lockHolder(), '');
  assert.ok(!existsSync(join(h.runDir, 'SAVE_FILES')));
  // The orphaned client still lives; its own session stays open but no longer writes.
  await held.release();
});

test('explicit close of a write session restores at once; reads stay allowed meanwhile', {
  skip,
}, async () => {
  const held = await h.heldClient(
    [
      ...writeLimit(60),
      { call: 'platformReadSignal', args: ['FILECTL::LIMIT', 1, 0] },
      { call: 'platformCloseSession' },
    ],
    { user: writer, setsid: true },
  );
  assert.equal(held.results[2]!.value, 60);
  assert.equal(held.results[3]!.ok, true);
  // Still connected and alive, but the session is closed: the control is back.
  assert.equal(h.control('FILECTL-LIMIT-0'), '100');
  assert.equal(lockHolder(), '');
  await held.release();
});

test('PlatformCloseSessionAdmin of the writer restores its controls; the client itself may close its own', {
  skip,
}, async () => {
  const held = await h.heldClient([...writeLimit(61), { pid: true }], { user: writer, setsid: true });
  const pid = held.results[2]!.value as number;
  const byOther = await h.client([{ call: 'platformCloseSessionAdmin', args: [pid] }], { user: other });
  assert.equal(byOther[0]!.name, ERROR_NAMES.PermissionDenied);
  assert.equal(h.control('FILECTL-LIMIT-0'), '61');
  const byAdmin = await h.client([{ call: 'platformCloseSessionAdmin', args: [pid] }]);
  assert.equal(byAdmin[0]!.ok, true, byAdmin[0]!.message);
  assert.equal(h.control('FILECTL-LIMIT-0'), '100');
  assert.equal(lockHolder(), '');
  await held.release();
  // Without CAP_SYS_ADMIN a client may force-close its own session, whatever its count.
  const own = await h.client(
    [
      { call: 'platformOpenSession' },
      { call: 'platformOpenSession' },
      { call: 'platformCloseSessionAdmin', args: ['$PID'] },
      { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] },
    ],
    { user: other },
  );
  assert.equal(own[2]!.ok, true, own[2]!.message);
  assert.equal(own[3]!.name, ERROR_NAMES.NoSession);
});

test('a second writer is rejected (naming the holder) while the first lives, accepted after', {
  skip,
}, async () => {
  const first = await h.heldClient(writeLimit(70), { user: writer, setsid: true });
  assert.equal(first.results[1]!.ok, true);
  const second = await h.client(writeLimit(80), { user: other, setsid: true });
  assert.equal(second[1]!.name, ERROR_NAMES.WriteLocked);
  assert.match(second[1]!.message!, new RegExp(`PID or SID of ${first.process.pid}`));
  assert.equal(h.control('FILECTL-LIMIT-0'), '70');
  await first.release();
  assert.ok(await waitFor(() => h.control('FILECTL-LIMIT-0') === '100'));
  const third = await h.client([...writeLimit(80), { call: 'platformCloseSession' }], {
    user: other,
    setsid: true,
  });
  assert.equal(third[1]!.ok, true, third[1]!.message);
  assert.equal(h.control('FILECTL-LIMIT-0'), '100');
});

test('a failing backend restore keeps the save dir, logs it and still frees write mode', {
  skip,
}, async () => {
  const held = await h.heldClient(writeLimit(65), { user: writer, setsid: true });
  h.setControlFile('FILECTL-LIMIT-0', 'fail');
  await held.release();
  assert.ok(await waitFor(() => lockHolder() === ''), h.daemonLog);
  const kept = readdirSync(h.runDir).filter((f) => /^SAVE_FILES-\d+-[0-9a-f-]+-del$/.test(f));
  assert.equal(kept.length, 1);
  assert.match(h.daemonLog, /failed to restore controls for pid \d+/);
  // Other settings of the failing backend were still written back.
  assert.equal(h.control('FILECTL-MODE-0'), '1');
  h.setControlFile('FILECTL-LIMIT-0', '100');
});

test('kill -9 of the daemon: live sessions and the writer survive a restart; a writer gone meanwhile is restored at start', {
  skip,
}, async () => {
  const writerClient = await h.heldClient([...writeLimit(42), { pid: true }], { user: writer, setsid: true });
  const reader = await h.heldClient([{ call: 'platformOpenSession' }, { pid: true }], {
    user: other,
    setsid: true,
  });
  const readerPid = reader.results[1]!.value as number;
  // Session files are written just after the reply (off the request path): a crash before
  // that forgets the session. Kill once it is on disk.
  for (const pid of [readerPid, writerClient.process.pid])
    assert.ok(await waitFor(() => existsSync(join(h.runDir, `session-${pid}.json`))));
  await h.stopDaemon('SIGKILL');
  await h.startDaemon();
  // The writer is alive, so nothing was restored and it still holds write mode.
  assert.equal(h.control('FILECTL-LIMIT-0'), '42');
  assert.equal(lockHolder(), String(writerClient.process.pid));
  assert.ok(existsSync(join(h.runDir, `session-${readerPid}.json`)));
  assert.match(h.daemonLog, new RegExp(`kept session of pid ${readerPid}`));

  await h.stopDaemon('SIGKILL');
  await writerClient.release(); // the writer exits while no daemon runs
  await h.startDaemon();
  assert.equal(h.control('FILECTL-LIMIT-0'), '100');
  assert.equal(lockHolder(), '');
  // The reader's session is still known: an admin can close it by pid.
  const closed = await h.client([{ call: 'platformCloseSessionAdmin', args: [readerPid] }]);
  assert.equal(closed[0]!.ok, true, closed[0]!.message);
  await reader.release();
});

test('a session record whose process start time differs is rejected (pid reuse)', { skip }, async () => {
  const gate = join(tempDir('jg-svc-gate-'), 'go');
  chmodSync(dirname(gate), 0o755);
  const running = h.client(
    [
      { call: 'platformOpenSession' },
      { pid: true },
      { waitFile: gate },
      { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] },
    ],
    { user: writer, setsid: true },
  );
  let file = '';
  assert.ok(
    await waitFor(() => {
      file = readdirSync(h.runDir).find((f) => /^session-\d+\.json$/.test(f)) ?? '';
      return file !== '';
    }),
  );
  await h.stopDaemon('SIGKILL');
  const path = join(h.runDir, file);
  const rec = JSON.parse(readFileSync(path, 'utf8'));
  rec.start_ticks += 1; // as if the pid now belonged to a process started later
  writeFileSync(path, JSON.stringify(rec), { mode: 0o600 });
  await h.startDaemon();
  assert.ok(!existsSync(path));
  assert.match(
    h.daemonLog,
    new RegExp(`dropping session of pid ${rec.client_pid}: process gone or pid reused`),
  );
  writeFileSync(gate, '');
  const r = await running;
  assert.equal(r[2]!.name, ERROR_NAMES.NoSession, r[2]!.message);
});

test('an invalid session file is quarantined at start', { skip }, async () => {
  await h.stopDaemon('SIGKILL');
  const path = join(h.runDir, `session-${process.pid}.json`);
  writeFileSync(path, JSON.stringify({ client_pid: process.pid, extra: 1 }), { mode: 0o600 });
  await h.startDaemon();
  assert.ok(!existsSync(path));
  assert.ok(
    readdirSync(h.runDir).some((f) => f.startsWith(`session-${process.pid}.json-`) && f.endsWith('-INVALID')),
  );
});

test('PlatformStartBatch with controls takes write mode; stop and close restore', { skip }, async () => {
  const r = await h.heldClient(
    [
      { call: 'platformOpenSession' },
      {
        call: 'platformStartBatch',
        args: [
          [{ domain: 0, idx: 0, name: 'FILECTL::COUNTER' }],
          [{ domain: 1, idx: 1, name: 'FILECTL::LIMIT' }],
        ],
      },
      { call: 'platformStartBatch', args: [[{ domain: 0, idx: 0, name: 'FILECTL::COUNTER' }], []] },
      { call: 'platformStartBatch', args: [[{ domain: 3, idx: 99, name: 'FILECTL::COUNTER' }], []] },
      { call: 'platformStartBatch', args: [[{ domain: 0, idx: 0, name: 'TIME' }], []] },
    ],
    { user: writer, setsid: true },
  );
  const started = r.results[1]!;
  assert.equal(started.ok, true, started.message);
  const { serverPid, serverKey } = started.value as { serverPid: number; serverKey: string };
  assert.ok(serverPid > 0);
  assert.equal(serverKey, String(r.process.pid));
  assert.equal(lockHolder(), String(r.process.pid));
  assert.match(r.results[2]!.message!, /already started a batch server/);
  assert.equal(r.results[3]!.name, ERROR_NAMES.InvalidArgument);
  assert.match(r.results[3]!.message!, /out of range/);
  assert.equal(r.results[4]!.name, ERROR_NAMES.PermissionDenied);
  await r.release();
  assert.ok(await waitFor(() => lockHolder() === ''), h.daemonLog);
  assert.ok(await waitFor(() => !processExists(serverPid)), 'batch server still running after client exit');
});

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('a batch server orphaned by a daemon crash is ended at restart', { skip }, async () => {
  const held = await h.heldClient(
    [
      { call: 'platformOpenSession' },
      { call: 'platformStartBatch', args: [[{ domain: 0, idx: 0, name: 'FILECTL::COUNTER' }], []] },
    ],
    { user: writer, setsid: true },
  );
  assert.equal(held.results[1]!.ok, true, held.results[1]!.message);
  const serverPid = (held.results[1]!.value as { serverPid: number }).serverPid;
  // The crash comes once the record names the server (written as the reply travels; a crash
  // before that: test/batch/server.test.ts, "a server never admitted ends with the daemon").
  const record = join(h.runDir, `session-${held.process.pid}.json`);
  assert.ok(await waitFor(() => readFileSync(record, 'utf8').includes(`"batch_server":${serverPid}`)));
  await h.stopDaemon('SIGKILL');
  await h.startDaemon();
  // Either the server noticed its daemon died and quit, or the new daemon killed it.
  // The restart's clean-up runs right after the daemon reports ready: wait for its log line.
  const cleanedUp = new RegExp(`batch server ${serverPid} (killed|gone) after the restart`);
  assert.ok(await waitFor(() => cleanedUp.test(h.daemonLog)), h.daemonLog);
  assert.ok(await waitFor(() => !processExists(serverPid) || isZombie(serverPid)));
  await held.release();
});

function isZombie(pid: number): boolean {
  try {
    return /^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

test('SIGTERM restores the writer, closes sessions and exits 0', { skip }, async () => {
  const held = await h.heldClient(writeLimit(33), { user: writer, setsid: true });
  assert.equal(h.control('FILECTL-LIMIT-0'), '33');
  const code = await h.stopDaemon('SIGTERM');
  assert.equal(code, 0);
  assert.equal(h.control('FILECTL-LIMIT-0'), '100');
  assert.deepEqual(
    readdirSync(h.runDir).filter((f) => /^session-\d+\.json$/.test(f)),
    [],
  );
  await held.release();
});
