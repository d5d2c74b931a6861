import assert from 'node:assert/strict';
import { chmodSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { ERROR_NAMES } from '../../../src/ipc/dbus/interface.js';
import { needsDaemon, whenMet } from '../../helpers/requirements.js';
import { tempDir } from '../../helpers/tmp.js';
import { ensureUser } from '../../helpers/users.js';
import { ServiceHarness, STRICT_ANSWERS, waitFor } from '../harness.js';

const skip = needsDaemon();

const h = new ServiceHarness(STRICT_ANSWERS);
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());

// Two groups with different lists, users in one, both or neither.
const inA = whenMet(skip, () => ensureUser('jgsvc_acc_a', ['jgsvc_grp_a']));
const inB = whenMet(skip, () => ensureUser('jgsvc_acc_b', ['jgsvc_grp_b']));
const inBoth = whenMet(skip, () => ensureUser('jgsvc_acc_ab', ['jgsvc_grp_a', 'jgsvc_grp_b']));
const inNone = whenMet(skip, () => ensureUser('jgsvc_acc_none'));

const SIGNALS = ['TIME', 'FILECTL::COUNTER', 'FILECTL::LIMIT', 'FILECTL::MODE'];
const CONTROLS = ['FILECTL::LIMIT', 'FILECTL::MODE'];

// default: TIME; group a: COUNTER + control MODE; group b: control LIMIT (readable as a signal).
const expected = new Map([
  [inNone.name, { signals: ['TIME'], controls: [] as string[] }],
  [inA.name, { signals: ['FILECTL::COUNTER', 'FILECTL::MODE', 'TIME'], controls: ['FILECTL::MODE'] }],
  [inB.name, { signals: ['FILECTL::LIMIT', 'TIME'], controls: ['FILECTL::LIMIT'] }],
  [
    inBoth.name,
    {
      signals: ['FILECTL::COUNTER', 'FILECTL::LIMIT', 'FILECTL::MODE', 'TIME'],
      controls: ['FILECTL::LIMIT', 'FILECTL::MODE'],
    },
  ],
]);

test('admin sets group lists over D-Bus', { skip }, async () => {
  const r = await h.client([
    { call: 'platformSetGroupAccess', args: ['', ['TIME'], []] },
    { call: 'platformSetGroupAccess', args: ['jgsvc_grp_a', ['FILECTL::COUNTER'], ['FILECTL::MODE']] },
    { call: 'platformSetGroupAccess', args: ['jgsvc_grp_b', [], ['FILECTL::LIMIT']] },
    { call: 'platformSetGroupAccess', args: ['jgsvc_no_such_group', [], []] },
    { call: 'platformSetGroupAccess', args: ['', ['NOT::A_SIGNAL'], []] },
  ]);
  for (const x of r.slice(0, 3)) assert.equal(x.ok, true, x.message);
  assert.equal(r[3]!.name, ERROR_NAMES.InvalidArgument);
  assert.match(r[3]!.message!, /Linux group is not defined/);
  // As in GEOPM, the service stores names this node lacks (lists may be shared by nodes with
  // other hardware; `joulegate access` validates unless -F) and never grants them.
  assert.equal(r[4]!.ok, true, r[4]!.message);
  const listed = await h.client([{ call: 'platformGetGroupAccess', args: [''] }]);
  assert.deepEqual(listed[0]!.value, { signals: [], controls: [] });
  const restored = await h.client([{ call: 'platformSetGroupAccess', args: ['', ['TIME'], []] }]);
  assert.equal(restored[0]!.ok, true, restored[0]!.message);
});

for (const user of [inNone, inA, inB, inBoth]) {
  test(`access matrix for ${user.name}: allowed iff listed`, { skip }, async () => {
    const want = expected.get(user.name)!;
    const steps: unknown[] = [{ call: 'platformGetUserAccess' }, { call: 'platformOpenSession' }];
    for (const s of SIGNALS) steps.push({ call: 'platformReadSignal', args: [s, 0, 0] });
    for (const c of CONTROLS) steps.push({ call: 'platformWriteControl', args: [c, 0, 0, 50] });
    steps.push({ call: 'platformCloseSession' });
    const r = await h.client(steps, { user, setsid: true });
    assert.deepEqual(r[0]!.value, want);
    assert.equal(r[1]!.ok, true, r[1]!.message);
    SIGNALS.forEach((s, i) => {
      const res = r[2 + i]!;
      if (want.signals.includes(s)) assert.equal(res.ok, true, `${user.name} read ${s}: ${res.message}`);
      else {
        assert.equal(res.name, ERROR_NAMES.PermissionDenied, `${user.name} read ${s}`);
        assert.match(res.message!, /not in the access list/);
      }
    });
    CONTROLS.forEach((c, i) => {
      const res = r[2 + SIGNALS.length + i]!;
      if (want.controls.includes(c)) assert.equal(res.ok, true, `${user.name} write ${c}: ${res.message}`);
      else assert.equal(res.name, ERROR_NAMES.PermissionDenied, `${user.name} write ${c}`);
    });
    assert.equal(r.at(-1)!.ok, true);
    // Closing the write session restored every control.
    assert.equal(h.control('FILECTL-LIMIT-0'), '100');
    assert.equal(h.control('FILECTL-MODE-0'), '1');
  });
}

test('a group list is a snapshot at session open: later edits do not change open sessions', {
  skip,
}, async () => {
  const gate = join(tempDir('jg-svc-gate-'), 'go');
  chmodSync(dirname(gate), 0o755);
  const steps = [
    { call: 'platformOpenSession' },
    { pid: true },
    { waitFile: gate },
    { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] },
    { call: 'platformCloseSession' },
  ];
  const running = h.client(steps, { user: inA, setsid: true });
  assert.ok(await waitFor(() => readdirSync(h.runDir).some((f) => /^session-\d+\.json$/.test(f))));
  await h.client([{ call: 'platformSetGroupAccessSignals', args: ['jgsvc_grp_a', []] }]);
  const fresh = await h.client(
    [{ call: 'platformOpenSession' }, { call: 'platformReadSignal', args: ['FILECTL::COUNTER', 0, 0] }],
    {
      user: inA,
    },
  );
  assert.equal(fresh[1]!.name, ERROR_NAMES.PermissionDenied);
  writeFileSync(gate, '');
  const r = await running;
  assert.equal(r[2]!.ok, true, r[2]!.message);
  assert.equal(r[2]!.value, 42);
  await h.client([{ call: 'platformSetGroupAccessSignals', args: ['jgsvc_grp_a', ['FILECTL::COUNTER']] }]);
});

test('root test process (CAP_SYS_ADMIN) gets every name', { skip }, async () => {
  const r = await h.client([{ call: 'platformGetUserAccess' }, { call: 'platformGetAllAccess' }]);
  assert.deepEqual(r[0]!.value, r[1]!.value);
  assert.ok((r[0]!.value as { signals: string[] }).signals.includes('FILECTL::COUNTER'));
});
