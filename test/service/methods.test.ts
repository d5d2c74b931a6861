import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ERROR_NAMES, introspectionXml } from '../../src/ipc/dbus/interface.js';
import { assertTopoCacheDescribes } from '../helpers/geopm-topo-cache.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { sysfsShape } from '../helpers/sysfs-topology.js';
import { ensureUser } from '../helpers/users.js';
import { ServiceHarness, waitFor } from './harness.js';

const skip = needsDaemon();

const h = new ServiceHarness();
const reader = whenMet(skip, () => ensureUser('jgsvc_reader'));

// Top level, not in before(): the helpers' after() hooks must attach to the file, not a hook.
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());

// The live introspection is checked against GEOPM's facts in interface-facts.test.ts.

test('packaging/io.github.geopm.xml is the generated introspection', { skip }, () => {
  const file = new URL('../../packaging/io.github.geopm.xml', import.meta.url);
  assert.equal(readFileSync(file, 'utf8'), introspectionXml());
});

test('Peer.Ping answers', { skip }, async () => {
  const [r] = await h.client([{ call: 'ping' }]);
  assert.deepEqual(r, { ok: true, value: null });
});

test('TopoGetCache gives GEOPM the counts of the node, and the same text as the cache file', {
  skip,
}, async () => {
  const [r] = await h.client([{ call: 'topoGetCache' }], { user: reader });
  assert.equal(r!.ok, true);
  const text = r!.value as string;
  const cache = assertTopoCacheDescribes(text, sysfsShape(h.sysroot));
  assert.equal(cache.fields.get('NUMA node1 CPU(s)'), '0xc'); // CPUs 2 and 3
  const file = join(h.runDir, 'geopm-topo-cache');
  assert.equal(readFileSync(file, 'utf8'), text);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(statSync(h.runDir).mode & 0o777, 0o711);
});

test('every method is callable by a real client, with GEOPM enum values in info', { skip }, async () => {
  const steps = [
    { call: 'platformSetGroupAccess', args: ['', ['FILECTL::COUNTER'], ['FILECTL::LIMIT']] },
    { call: 'platformSetGroupAccessSignals', args: ['', ['FILECTL::COUNTER', 'TIME']] },
    { call: 'platformSetGroupAccessControls', args: ['', ['FILECTL::LIMIT', 'FILECTL::MODE']] },
    { call: 'platformGetGroupAccess', args: [''] },
    { call: 'platformGetUserAccess' },
    { call: 'platformGetAllAccess' },
    { call: 'platformGetSignalInfo', args: [['FILECTL::COUNTER']] },
    { call: 'platformGetControlInfo', args: [['FILECTL::LIMIT']] },
    { call: 'platformOpenSession' },
    { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] },
    { call: 'platformWriteControl', args: ['FILECTL::LIMIT', 1, 1, 77] },
    { call: 'platformRestoreControl' },
    { call: 'platformStartBatch', args: [[{ domain: 0, idx: 0, name: 'FILECTL::COUNTER' }], []] },
    { call: 'platformStopBatch', args: ['$LAST_SERVER_PID'] },
    { call: 'platformStartProfile', args: ['prof-a'] },
    { call: 'platformGetProfilePids', args: ['prof-a'] },
    { call: 'platformStopProfile', args: [['region-1', 'region-2']] },
    { call: 'platformPopProfileRegionNames', args: ['prof-a'] },
    { call: 'platformLockControl' },
    { call: 'platformUnlockControl' },
    { call: 'platformCloseSession' },
    { call: 'platformOpenSession' },
    { call: 'platformCloseSessionAdmin', args: [0] },
  ];
  const results = await h.client(steps, { setsid: true });
  const byCall = (i: number) => results[i]!;
  for (let i = 0; i < results.length; i++) {
    if (i === results.length - 1) continue; // checked below
    assert.equal(byCall(i).ok, true, `${steps[i]!.call}: ${byCall(i).message}`);
  }
  assert.deepEqual(byCall(3).value, {
    signals: ['FILECTL::COUNTER', 'FILECTL::LIMIT', 'FILECTL::MODE', 'TIME'],
    controls: ['FILECTL::LIMIT', 'FILECTL::MODE'],
  });
  const info = (
    byCall(6).value as { domain: number; aggregation: number; format: number; behavior: number }[]
  )[0]!;
  assert.deepEqual([info.domain, info.aggregation, info.format, info.behavior], [0, 0, 1, 1]);
  assert.match((byCall(6).value as { description: string }[])[0]!.description, /iogroup: FILECTL/);
  assert.deepEqual((byCall(7).value as { domain: number }[])[0]!.domain, 1);
  assert.equal(byCall(9).value, 42);
  // Restore already put the limit back while the session still writes.
  assert.equal(h.control('FILECTL-LIMIT-1'), '100');
  const { serverPid, serverKey } = byCall(12).value as { serverPid: number; serverKey: string };
  assert.ok(serverPid > 0);
  assert.match(serverKey, /^\d+$/);
  // PlatformStopBatch ended the server process.
  const alive = () => {
    try {
      process.kill(serverPid, 0);
      return !/^State:\s*Z/m.test(readFileSync(`/proc/${serverPid}/status`, 'utf8'));
    } catch {
      return false;
    }
  };
  assert.ok(await waitFor(() => !alive()));
  assert.equal((byCall(15).value as number[]).length, 1);
  assert.deepEqual(byCall(17).value, ['region-1', 'region-2']);
  // CloseSessionAdmin of pid 0 names the missing session.
  assert.equal(byCall(results.length - 1).name, ERROR_NAMES.NoSession);
});

test('the usage log is admin-only and lists names used since start', { skip }, async () => {
  const [asUserResult] = await h.client([{ call: 'platformGetGroupAccess', args: ['0.LOG_REQUEST'] }], {
    user: reader,
  });
  assert.equal(asUserResult!.name, ERROR_NAMES.PermissionDenied);
  const [asAdmin] = await h.client([{ call: 'platformGetGroupAccess', args: ['0.LOG_REQUEST'] }]);
  assert.equal(asAdmin!.ok, true);
  assert.ok((asAdmin!.value as { signals: string[] }).signals.includes('FILECTL::COUNTER'));
  assert.ok((asAdmin!.value as { controls: string[] }).controls.includes('FILECTL::LIMIT'));
});

test('calls that need a session fail without one', { skip }, async () => {
  const results = await h.client(
    [
      { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] },
      { call: 'platformWriteControl', args: ['FILECTL::LIMIT', 1, 0, 5] },
      { call: 'platformCloseSession' },
      { call: 'platformStopBatch', args: [1] },
      { call: 'platformRestoreControl' },
      { call: 'platformStartBatch', args: [[{ domain: 0, idx: 0, name: 'FILECTL::COUNTER' }], []] },
    ],
    { user: reader },
  );
  for (const r of results) assert.equal(r.name, ERROR_NAMES.NoSession, r.message);
  assert.equal(h.control('FILECTL-LIMIT-0'), '100');
});

test('admin methods refuse a caller without CAP_SYS_ADMIN', { skip }, async () => {
  const results = await h.client(
    [
      { call: 'platformSetGroupAccess', args: ['', [], []] },
      { call: 'platformSetGroupAccessSignals', args: ['', []] },
      { call: 'platformSetGroupAccessControls', args: ['', []] },
      { call: 'platformLockControl' },
      { call: 'platformUnlockControl' },
      { call: 'platformCloseSessionAdmin', args: [1] },
      { call: 'platformGetProfilePids', args: ['x'] },
      { call: 'platformPopProfileRegionNames', args: ['x'] },
    ],
    { user: reader },
  );
  for (const r of results) {
    assert.equal(r.name, ERROR_NAMES.PermissionDenied, r.message);
    assert.match(r.message!, /requires CAP_SYS_ADMIN/);
  }
});

test('PlatformLockControl keeps every client out of write mode until unlocked, across restarts', {
  skip,
}, async () => {
  await h.client([{ call: 'platformLockControl' }]);
  const locked = await h.client(
    [{ call: 'platformOpenSession' }, { call: 'platformWriteControl', args: ['FILECTL::LIMIT', 1, 0, 5] }],
    { setsid: true },
  );
  assert.equal(locked[1]!.name, ERROR_NAMES.WriteLocked);
  await h.stopDaemon();
  await h.startDaemon();
  const still = await h.client(
    [{ call: 'platformOpenSession' }, { call: 'platformWriteControl', args: ['FILECTL::LIMIT', 1, 0, 5] }],
    { setsid: true },
  );
  assert.equal(still[1]!.name, ERROR_NAMES.WriteLocked);
  await h.client([{ call: 'platformUnlockControl' }]);
  const unlocked = await h.client(
    [{ call: 'platformOpenSession' }, { call: 'platformWriteControl', args: ['FILECTL::LIMIT', 1, 0, 5] }],
    { setsid: true },
  );
  assert.equal(unlocked[1]!.ok, true, unlocked[1]!.message);
  // restored once that client exited
  assert.ok(await waitFor(() => h.control('FILECTL-LIMIT-0') === '100'), h.daemonLog);
});
