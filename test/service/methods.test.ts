import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ERROR_NAMES, introspectionXml } from '../../src/ipc/dbus/interface.js';
import { assertTopoCacheDescribes } from '../helpers/geopm-topo-cache.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { sysfsShape } from '../helpers/sysfs-topology.js';
import { ensureUser } from '../helpers/users.js';
import { ServiceHarness, STRICT_ANSWERS, waitFor } from './harness.js';

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

const LOG = '0.LOG_REQUEST';
const GEOPM_GUARDED = '0.GEOPM_SERVICE_LOG_REQUEST';
const COUNTER_BATCH = [[{ domain: 0, idx: 0, name: 'FILECTL::COUNTER' }], []];

// GEOPM 3.1 checks CAP_SYS_ADMIN only for a group named 0.GEOPM_SERVICE_LOG_REQUEST, not for
// 0.LOG_REQUEST that its log is kept under: `geopmaccess -l` works for any user.
test('group lists and the usage log are readable by any user, as in GEOPM; the group GEOPM guards is not', {
  skip,
}, async () => {
  const [log, defaults, guarded] = await h.client(
    [
      { call: 'platformGetGroupAccess', args: [LOG] },
      { call: 'platformGetGroupAccess', args: [''] },
      { call: 'platformGetGroupAccess', args: [GEOPM_GUARDED] },
    ],
    { user: reader },
  );
  assert.equal(log!.ok, true, log!.message);
  assert.ok((log!.value as { signals: string[] }).signals.includes('FILECTL::COUNTER'));
  assert.ok((log!.value as { controls: string[] }).controls.includes('FILECTL::LIMIT'));
  assert.equal(defaults!.ok, true, defaults!.message);
  assert.ok((defaults!.value as { signals: string[] }).signals.includes('TIME'));
  assert.equal(guarded!.name, ERROR_NAMES.PermissionDenied);
  assert.match(guarded!.message!, /requires CAP_SYS_ADMIN/);
});

// GEOPM answers these with NaN (ReadSignal) or server pid -1 (StartBatch) in an OK reply.
test('ReadSignal without a session, of a name not allowed or unknown: NaN; StartBatch without a session: pid -1', {
  skip,
}, async () => {
  const noSession = await h.client(
    [
      { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] },
      { call: 'platformStartBatch', args: COUNTER_BATCH },
      { call: 'platformWriteControl', args: ['FILECTL::LIMIT', 1, 0, 5] },
      { call: 'platformCloseSession' },
      { call: 'platformStopBatch', args: [1] },
      { call: 'platformRestoreControl' },
    ],
    { user: reader },
  );
  assert.equal(noSession[0]!.ok, true, noSession[0]!.message);
  assert.equal(noSession[0]!.value, 'NaN');
  assert.deepEqual(noSession[1]!.value, { serverPid: -1, serverKey: '' });
  // GEOPM fails these without a session, as joulegated does.
  for (const r of noSession.slice(2)) assert.equal(r.name, ERROR_NAMES.NoSession, r.message);
  assert.equal(h.control('FILECTL-LIMIT-0'), '100');

  await h.client([{ call: 'platformSetGroupAccessSignals', args: ['', ['TIME']] }]);
  const inSession = await h.client(
    [
      { call: 'platformOpenSession' },
      { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] },
      { call: 'platformReadSignal', args: ['NO::SUCH_SIGNAL', 0, 0] },
      { call: 'platformReadSignal', args: ['TIME', 0, 0] },
      { call: 'platformStartBatch', args: COUNTER_BATCH },
      { call: 'platformCloseSession' },
    ],
    { user: reader },
  );
  assert.equal(inSession[0]!.ok, true, inSession[0]!.message);
  assert.equal(inSession[1]!.value, 'NaN');
  assert.equal(inSession[2]!.value, 'NaN');
  assert.equal(typeof inSession[3]!.value, 'number');
  // A batch of names not allowed is refused by GEOPM too.
  assert.equal(inSession[4]!.name, ERROR_NAMES.PermissionDenied, inSession[4]!.message);
  assert.match(inSession[4]!.message!, /not in the access list/);
});

// The texts GEOPM 3.1's geopmd gives (and its geopmread prints after "SERVICE::TIME:").
test("PlatformGetSignalInfo describes TIME and TIME::ELAPSED with GEOPM's texts", { skip }, async () => {
  const [r] = await h.client([{ call: 'platformGetSignalInfo', args: [['TIME', 'TIME::ELAPSED']] }], {
    user: reader,
  });
  assert.equal(r!.ok, true, r!.message);
  const [time, elapsed] = r!.value as { description: string }[];
  assert.equal(
    time!.description,
    [
      '    description: Time elapsed since the beginning of execution.',
      '    iogroup: Time',
      '    alias_for: TIME::ELAPSED',
    ].join('\n'),
  );
  assert.equal(
    elapsed!.description,
    [
      '    description: Time since the start of application profiling.',
      '    units: seconds',
      '    aggregation: select_first',
      '    domain: cpu',
      '    iogroup: TimeIOGroup',
    ].join('\n'),
  );
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

test('JOULEGATE_STRICT_ERRORS=1: error replies that name the cause where GEOPM answers NaN, pid -1 or the log', {
  skip,
}, async () => {
  await h.stopDaemon();
  await h.startDaemon(STRICT_ANSWERS);
  try {
    const r = await h.client(
      [
        { call: 'platformGetGroupAccess', args: [LOG] },
        { call: 'platformGetGroupAccess', args: [''] },
        { call: 'platformReadSignal', args: ['TIME', 0, 0] },
        { call: 'platformStartBatch', args: COUNTER_BATCH },
        { call: 'platformOpenSession' },
        { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] },
        { call: 'platformReadSignal', args: ['NO::SUCH_SIGNAL', 0, 0] },
        { call: 'platformCloseSession' },
      ],
      { user: reader },
    );
    assert.equal(r[0]!.name, ERROR_NAMES.PermissionDenied);
    assert.equal(r[1]!.ok, true, r[1]!.message);
    assert.equal(r[2]!.name, ERROR_NAMES.NoSession);
    assert.match(r[2]!.message!, /'PlatformReadSignal' not allowed without an open session/);
    assert.equal(r[3]!.name, ERROR_NAMES.NoSession);
    assert.equal(r[4]!.ok, true, r[4]!.message);
    for (const denied of [r[5]!, r[6]!]) {
      assert.equal(denied.name, ERROR_NAMES.PermissionDenied, denied.message);
      assert.match(denied.message!, /is not in the access list of PID/);
    }
    const [asAdmin] = await h.client([{ call: 'platformGetGroupAccess', args: [LOG] }]);
    assert.equal(asAdmin!.ok, true, asAdmin!.message);
  } finally {
    await h.stopDaemon();
    await h.startDaemon();
  }
});
