import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import {
  CALL_TIMEOUT_MS_DEFAULT,
  DBusConnection,
  defaultCallTimeoutMs,
} from '../../../src/ipc/dbus/connection.js';
import { GeopmClient } from '../../../src/ipc/geopm-client.js';
import { runCli } from '../../helpers/cli.js';
import { startPrivateBus } from '../../helpers/dbus.js';
import { needsRoot, needsTool, requirements, whenMet } from '../../helpers/requirements.js';

const skip = requirements(
  needsRoot('owns a name on a private bus, where only root may'),
  needsTool('dbus-daemon'),
);

// A peer that owns the service's name on a private bus and swallows every call: the bus
// delivers the calls, nobody answers. Clients must give up after their timeout with one line
// that names the method and the bus, instead of hanging (libdbus's default is 25 s).
const NAME = 'io.github.geopm';
const bus = await whenMet(skip, () => startPrivateBus());
const silent = await whenMet(skip, () => DBusConnection.connect(bus.address));
await whenMet(skip, () => silent.requestName(NAME));
let swallowed = 0;
whenMet(skip, () =>
  silent.onMethodCall(() => {
    swallowed++;
  }),
);
after(() => {
  if (!skip) silent.close();
});

const env = (timeout: string) => ({
  DBUS_SYSTEM_BUS_ADDRESS: bus.address,
  JOULEGATE_BUS_NAME: NAME,
  JOULEGATE_DBUS_TIMEOUT_MS: timeout,
});

test('the default call timeout is libdbus 25 s; JOULEGATE_DBUS_TIMEOUT_MS sets it, bad values are refused', {
  skip,
}, () => {
  assert.equal(CALL_TIMEOUT_MS_DEFAULT, 25_000);
  assert.equal(defaultCallTimeoutMs(undefined), 25_000);
  assert.equal(defaultCallTimeoutMs(''), 25_000);
  assert.equal(defaultCallTimeoutMs('1500'), 1500);
  for (const bad of ['0', '-5', 'abc', '1e3', '5000000000']) {
    assert.throws(() => defaultCallTimeoutMs(bad), /^Error: JOULEGATE_DBUS_TIMEOUT_MS must be a number/, bad);
  }
});

test('`joulegate access -a` against a peer that never replies fails within the timeout, in one line', {
  skip,
}, async () => {
  const before = swallowed;
  const t0 = performance.now();
  const r = await runCli(['access', '-a'], { env: env('800'), timeoutMs: 20_000 });
  const elapsed = performance.now() - t0;
  assert.equal(r.code, 255, r.stderr);
  assert.equal(r.stdout, '');
  // geopmaccess's error format: one line, then a blank line.
  assert.match(
    r.stderr,
    /^Error: no reply to io\.github\.geopm\.PlatformGetAllAccess from io\.github\.geopm within 800 ms \(bus unix:path=[^;]+; JOULEGATE_DBUS_TIMEOUT_MS sets the limit\)\n\n$/,
  );
  assert.ok(elapsed >= 800 && elapsed < 8000, `took ${elapsed} ms`);
  assert.ok(swallowed > before, 'the call reached the silent peer');
});

test('a bad JOULEGATE_DBUS_TIMEOUT_MS is one error line, not a hang or a stack trace', { skip }, async () => {
  const r = await runCli(['access', '-a'], { env: env('soon'), timeoutMs: 20_000 });
  assert.equal(r.code, 255);
  assert.equal(
    r.stderr,
    'Error: JOULEGATE_DBUS_TIMEOUT_MS must be a number of milliseconds from 1 to 2147483647, not "soon"\n\n',
  );
});

test('GeopmClient: timeoutMs per client; the connection stays usable after a timeout', { skip }, async () => {
  const client = await GeopmClient.connect({ address: bus.address, busName: NAME, timeoutMs: 300 });
  try {
    const t0 = performance.now();
    await assert.rejects(
      client.platformReadSignal('TIME', 0, 0),
      (err: Error) =>
        err.name === 'JoulegateError' &&
        !err.message.includes('\n') &&
        /^no reply to io\.github\.geopm\.PlatformReadSignal from io\.github\.geopm within 300 ms \(bus unix:path=/.test(
          err.message,
        ),
    );
    const elapsed = performance.now() - t0;
    assert.ok(elapsed >= 300 && elapsed < 3000, `took ${elapsed} ms`);
    // Other calls on the same connection still get their replies.
    const [id] = await client.connection.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'GetId',
    });
    assert.match(String(id), /^[0-9a-f]{32}$/);
  } finally {
    client.close();
  }
});

test('a call option overrides the connection timeout', { skip }, async () => {
  const conn = await DBusConnection.connect(bus.address, { callTimeoutMs: 60_000 });
  try {
    const t0 = performance.now();
    await assert.rejects(
      conn.call({ destination: NAME, path: '/io/github/geopm', member: 'Anything', timeoutMs: 200 }),
      /^DBusTimeoutError: no reply to Anything from io\.github\.geopm within 200 ms/,
    );
    assert.ok(performance.now() - t0 < 5000);
  } finally {
    conn.close();
  }
});
