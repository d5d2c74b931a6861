import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DBusConnection } from '../../src/ipc/dbus/connection.js';
import { run } from '../helpers/cli.js';
import { startPrivateBus } from '../helpers/dbus.js';
import { needsTestUsers, needsTool, requirements } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { asUser, ensureUser } from '../helpers/users.js';

const skip = requirements(
  needsTestUsers(),
  needsTool('dbus-daemon', 'dbus-send', 'systemd-analyze', 'systemd-tmpfiles'),
);

const PACKAGING = new URL('../../packaging/', import.meta.url).pathname;
const POLICY = join(PACKAGING, 'io.github.geopm.conf');
const UNIT = join(PACKAGING, 'joulegated.service');

/** `[Section]` → key → values (a key may repeat), as systemd reads unit files. */
function parseIni(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      current = new Map();
      sections.set(header[1]!, current);
      continue;
    }
    const eq = line.indexOf('=');
    assert.ok(current && eq > 0, `not a key=value line inside a section: ${line}`);
    const key = line.slice(0, eq).trim();
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return sections;
}

test('the systemd unit passes systemd-analyze verify without warnings', { skip }, async () => {
  const dir = tempDir();
  // verify insists the ExecStart binary exists; everything else is checked as shipped.
  const unit = readFileSync(UNIT, 'utf8').replace(/^ExecStart=.*$/m, 'ExecStart=/bin/true');
  writeFileSync(join(dir, 'joulegated.service'), unit);
  const r = await run('systemd-analyze', ['verify', join(dir, 'joulegated.service')]);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /Unknown|Invalid|ignoring|Failed/i, r.stderr);
  // The check itself catches a bad key.
  writeFileSync(
    join(dir, 'joulegated.service'),
    unit.replace('[Service]', '[Service]\nProtectEverything=yes'),
  );
  const bad = await run('systemd-analyze', ['verify', join(dir, 'joulegated.service')]);
  assert.match(bad.stderr, /Unknown key 'ProtectEverything'/);
});

test('the unit is a D-Bus service that restarts with a start limit, hardened but able to write hardware', {
  skip,
}, () => {
  const unit = parseIni(readFileSync(UNIT, 'utf8'));
  const get = (s: string, k: string) => unit.get(s)?.get(k)?.join(' ');
  assert.equal(get('Service', 'Type'), 'dbus');
  assert.equal(get('Service', 'BusName'), 'io.github.geopm');
  // No directory: systemd's search path holds npm's prefixes (/usr/local/bin, /usr/bin).
  assert.equal(get('Service', 'ExecStart'), 'joulegated');
  assert.equal(get('Service', 'EnvironmentFile'), '-/etc/default/joulegated');
  assert.equal(get('Service', 'Restart'), 'always');
  assert.ok(Number(get('Unit', 'StartLimitIntervalSec')) > 0, 'a restart loop must end');
  assert.ok(Number(get('Unit', 'StartLimitBurst')) > 0);
  assert.equal(get('Service', 'ProtectSystem'), 'strict');
  const writable = (get('Service', 'ReadWritePaths') ?? '').split(/\s+/);
  for (const p of ['/run/geopm', '/etc/geopm']) assert.ok(writable.includes(p), `${p} writable`);
  for (const [k, v] of [
    ['ProtectHome', 'yes'],
    ['PrivateTmp', 'yes'],
    ['NoNewPrivileges', 'yes'],
  ]) {
    assert.equal(get('Service', k!), v, k);
  }
  // These would take away what the daemon exists for: sysfs writes, /dev/cpu/*/msr, GPU nodes,
  // and Node's JIT.
  for (const k of ['ProtectKernelTunables', 'PrivateDevices', 'DevicePolicy', 'MemoryDenyWriteExecute']) {
    assert.equal(get('Service', k), undefined, `${k} must not be set`);
  }
  assert.match(get('Service', 'CapabilityBoundingSet') ?? '', /CAP_SYS_RAWIO/);
  assert.equal(get('Install', 'WantedBy'), 'multi-user.target');
});

test('the D-Bus activation file starts the unit', { skip }, () => {
  const svc = parseIni(readFileSync(join(PACKAGING, 'io.github.geopm.service'), 'utf8')).get('D-BUS Service');
  assert.equal(svc?.get('Name')?.[0], 'io.github.geopm');
  assert.equal(svc?.get('SystemdService')?.[0], 'joulegated.service');
  assert.equal(svc?.get('User')?.[0], 'root');
});

test('the tmpfiles entry creates /run/geopm 0711 and /etc/geopm 0700, root-owned', { skip }, async () => {
  const root = tempDir();
  const r = await run('systemd-tmpfiles', [
    '--create',
    `--root=${root}`,
    join(PACKAGING, 'tmpfiles.d/joulegated.conf'),
  ]);
  assert.equal(r.code, 0, r.stderr);
  for (const [p, mode] of [
    ['run/geopm', 0o711],
    ['etc/geopm', 0o700],
  ] as const) {
    const st = statSync(join(root, p));
    assert.ok(st.isDirectory(), p);
    assert.equal(st.mode & 0o7777, mode, p);
    assert.equal(st.uid, 0);
  }
});

/**
 * A bus configured like a distribution's system bus (nobody may own names or send method calls
 * unless a policy file allows it), optionally including the shipped policy.
 */
async function systemLikeBus(includePolicy: boolean): Promise<string> {
  // A distribution's system bus denies method calls by default; only the included policy file
  // opens io.github.geopm.
  const bus = await startPrivateBus(`  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
  </policy>
  ${includePolicy ? `<include>${POLICY}</include>` : ''}`);
  return bus.address;
}

function dbusSend(address: string, args: string[], user?: ReturnType<typeof ensureUser>) {
  const prefix = user ? [...asUser(user), 'env', `DBUS_SYSTEM_BUS_ADDRESS=${address}`] : [];
  return run('dbus-send', ['--system', '--print-reply', ...args], {
    env: { DBUS_SYSTEM_BUS_ADDRESS: address },
    prefix,
  });
}

const requestName = [
  '--dest=org.freedesktop.DBus',
  '/org/freedesktop/DBus',
  'org.freedesktop.DBus.RequestName',
];

test('the policy file is valid bus configuration: root may own io.github.geopm, users may not', {
  skip,
}, async () => {
  const address = await systemLikeBus(true);
  const user = ensureUser('jg-e2-bususer');
  const denied = await dbusSend(address, [...requestName, 'string:io.github.geopm', 'uint32:0'], user);
  assert.notEqual(denied.code, 0);
  assert.match(denied.stderr, /AccessDenied.*not allowed to own the service "io\.github\.geopm"/);
  const owned = await dbusSend(address, [...requestName, 'string:io.github.geopm', 'uint32:0']);
  assert.equal(owned.code, 0, owned.stderr);
  assert.match(owned.stdout, /uint32 1/, 'root became primary owner');
  // The policy grants exactly this name.
  const other = await dbusSend(address, [...requestName, 'string:io.github.other', 'uint32:0']);
  assert.match(other.stderr, /AccessDenied/);
});

test('without the policy file even root may not own the name (the include is what grants it)', {
  skip,
}, async () => {
  const address = await systemLikeBus(false);
  const r = await dbusSend(address, [...requestName, 'string:io.github.geopm', 'uint32:0']);
  assert.match(r.stderr, /AccessDenied/);
});

test('a non-root user may call the service interface, but not other interfaces of its connection', {
  skip,
}, async () => {
  const address = await systemLikeBus(true);
  const owner = await DBusConnection.connect(address);
  after(() => owner.close());
  await owner.requestName('io.github.geopm');
  const user = ensureUser('jg-e2-bususer');
  // The owner answers every call with UnknownObject: getting that answer proves delivery.
  const call = await dbusSend(
    address,
    ['--dest=io.github.geopm', '/io/github/geopm', 'io.github.geopm.TopoGetCache'],
    user,
  );
  assert.match(call.stderr, /org\.freedesktop\.DBus\.Error\.UnknownObject/);
  const ping = await dbusSend(
    address,
    ['--dest=io.github.geopm', '/io/github/geopm', 'org.freedesktop.DBus.Peer.Ping'],
    user,
  );
  assert.doesNotMatch(ping.stderr, /AccessDenied/);
  const other = await dbusSend(
    address,
    ['--dest=io.github.geopm', '/io/github/geopm', 'org.example.Private.Do'],
    user,
  );
  assert.match(other.stderr, /org\.freedesktop\.DBus\.Error\.AccessDenied/);
});
