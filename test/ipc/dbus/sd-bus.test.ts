import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inSignature, METHOD_NAMES, outSignature } from '../../../src/ipc/dbus/interface.js';
import { GeopmClient, type ServiceError } from '../../../src/ipc/geopm-client.js';
import { run } from '../../helpers/cli.js';
import { needsDaemon, needsTool, requirements, whenMet } from '../../helpers/requirements.js';
import { asUser, ensureUser } from '../../helpers/users.js';
import { ServiceHarness } from '../../service/harness.js';

const skip = requirements(needsDaemon(), needsTool('busctl'));

// busctl is built on sd-bus, the library GEOPM's own C++ client (libgeopmd SDBus.cpp) uses: if
// busctl can introspect and call joulegated, the wire format matches what GEOPM clients send.
const h = new ServiceHarness();
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());
const user = whenMet(skip, () => ensureUser('jgsvc_sdbus'));

async function busctl(args: string[], asOther = false) {
  return run('busctl', [`--address=${h.bus.address}`, ...args], asOther ? { prefix: asUser(user) } : {});
}

const call = (method: string, ...args: string[]) => [
  'call',
  'io.github.geopm',
  '/io/github/geopm',
  'io.github.geopm',
  method,
  ...args,
];

test('sd-bus (busctl) introspects the 23 methods with GEOPM signatures', { skip }, async () => {
  const r = await busctl(['introspect', 'io.github.geopm', '/io/github/geopm', 'io.github.geopm']);
  assert.equal(r.code, 0, r.stderr);
  for (const name of METHOD_NAMES) {
    const line = r.stdout.split('\n').find((l) => l.startsWith(`.${name} `));
    assert.ok(line, `${name} missing`);
    const [, , inSig, outSig] = line.trim().split(/\s+/);
    assert.equal(inSig, inSignature(name) || '-', name);
    assert.equal(outSig, outSignature(name) || '-', name);
  }
});

test('sd-bus calls get typed replies', { skip }, async () => {
  const info = await busctl(
    [...call('PlatformGetSignalInfo', 'as', '1', 'FILECTL::COUNTER'), '--json=short'],
    true,
  );
  assert.equal(info.code, 0, info.stderr);
  const parsed = JSON.parse(info.stdout) as {
    type: string;
    data: [[string, string, number, number, number, number][]];
  };
  assert.equal(parsed.type, 'a(ssiiii)');
  assert.deepEqual(parsed.data[0][0]!.slice(2), [0, 0, 1, 1]);
  const topo = await busctl([...call('TopoGetCache'), '--json=short'], true);
  assert.match((JSON.parse(topo.stdout) as { data: string[] }).data[0]!, /^Socket\(s\):\s+2$/m);
  const open = await busctl(call('PlatformOpenSession'), true);
  assert.equal(open.code, 0, open.stderr);
});

test('sd-bus sees GEOPM answers without a session, and D-Bus errors with the daemon message', {
  skip,
}, async () => {
  // As GEOPM: NaN and server pid -1 in OK replies (JOULEGATE_STRICT_ERRORS=1 makes them errors).
  const read = await busctl(call('PlatformReadSignal', 'sii', 'FILECTL::COUNTER', '0', '0'), true);
  assert.equal(read.code, 0, read.stderr);
  assert.match(read.stdout, /^d nan$/im);
  const batch = await busctl(call('PlatformStartBatch', 'a(iis)a(iis)', '1', '0', '0', 'TIME', '0'), true);
  assert.equal(batch.code, 0, batch.stderr);
  assert.match(batch.stdout, /^\(is\) -1 ""$/m);
  const write = await busctl(call('PlatformWriteControl', 'siid', 'FILECTL::LIMIT', '1', '0', '5'), true);
  assert.match(write.stderr, /not allowed without an open session/);
  const wrong = await busctl(call('PlatformReadSignal', 's', 'TIME'), true);
  assert.match(wrong.stderr, /expects signature 'sii', got 's'/);
  const admin = await busctl(call('PlatformLockControl'), true);
  assert.match(admin.stderr, /requires CAP_SYS_ADMIN/);
});

const properties = (method: string, ...args: string[]) => [
  'call',
  'io.github.geopm',
  '/io/github/geopm',
  'org.freedesktop.DBus.Properties',
  method,
  ...args,
];

test('sd-bus: Properties is introspected and answered as GEOPM answers it', { skip }, async () => {
  const intro = await busctl(['introspect', 'io.github.geopm', '/io/github/geopm'], true);
  assert.equal(intro.code, 0, intro.stderr);
  for (const member of ['.Get ', '.GetAll ', '.Set ', '.PropertiesChanged ']) {
    assert.ok(
      intro.stdout.split('\n').some((l) => l.startsWith(member)),
      `${member}: ${intro.stdout}`,
    );
  }
  assert.match(intro.stdout, /^org\.freedesktop\.DBus\.Properties\s+interface/m);
  // GetAll of io.github.geopm: an empty a{sv}, for any caller.
  const all = await busctl([...properties('GetAll', 's', 'io.github.geopm'), '--json=short'], true);
  assert.equal(all.code, 0, all.stderr);
  assert.deepEqual(JSON.parse(all.stdout), { type: 'a{sv}', data: [{}] });
  // Get and Set of a property it does not have, and any other interface: InvalidArgs (GDBus's
  // error, which geopmd's clients see).
  const get = await busctl(
    ['get-property', 'io.github.geopm', '/io/github/geopm', 'io.github.geopm', 'Foo'],
    true,
  );
  assert.notEqual(get.code, 0);
  assert.match(get.stderr, /No such property “Foo”/);
  const set = await busctl(
    ['set-property', 'io.github.geopm', '/io/github/geopm', 'io.github.geopm', 'Foo', 's', 'bar'],
    true,
  );
  assert.notEqual(set.code, 0);
  assert.match(set.stderr, /No such property “Foo”/);
  const other = await busctl(properties('GetAll', 's', 'org.example.Nope'), true);
  assert.notEqual(other.code, 0);
  assert.match(other.stderr, /No such interface “org\.example\.Nope”/);
  const wrong = await busctl(properties('Get', 's', 'io.github.geopm'), true);
  assert.match(wrong.stderr, /does not match expected type “\(ss\)”/);
  assert.equal(h.daemon!.exitCode, null);
});

test('our client: Properties GetAll is an empty a{sv}; Get fails with InvalidArgs', { skip }, async () => {
  const client = await GeopmClient.connect({ address: h.bus.address });
  try {
    const props = { interface: 'org.freedesktop.DBus.Properties' };
    const all = await client.raw({ ...props, member: 'GetAll', signature: 's', body: ['io.github.geopm'] });
    assert.deepEqual(all, [[]]);
    await assert.rejects(
      client.raw({ ...props, member: 'Get', signature: 'ss', body: ['io.github.geopm', 'Version'] }),
      (err: ServiceError) =>
        err.dbusName === 'org.freedesktop.DBus.Error.InvalidArgs' &&
        /No such property “Version”/.test(err.message),
    );
    await assert.rejects(
      client.raw({ ...props, member: 'Delete', signature: 's', body: ['x'] }),
      (err: ServiceError) => err.dbusName === 'org.freedesktop.DBus.Error.UnknownMethod',
    );
  } finally {
    client.close();
  }
});
