import assert from 'node:assert/strict';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { authenticateExternal, MAX_AUTH_LINE_BYTES } from '../../../src/ipc/dbus/auth.js';
import { DBusConnection, socketPathOf } from '../../../src/ipc/dbus/connection.js';
import { encodeMessage, MessageType } from '../../../src/ipc/dbus/wire.js';
import { startPrivateBus, TEST_BUS_POLICY } from '../../helpers/dbus.js';
import { needsTool } from '../../helpers/requirements.js';
import { tempDir } from '../../helpers/tmp.js';

const skip = needsTool('dbus-daemon');

const UID = process.getuid!();

function guidOf(address: string): string {
  return /guid=([0-9a-f]{32})/.exec(address)![1]!;
}

async function connectError(address: string, timeoutMs?: number): Promise<string> {
  const err = await DBusConnection.connect(address, { timeoutMs }).then(
    (conn) => {
      conn.close();
      return undefined;
    },
    (e: Error) => e,
  );
  assert.ok(err, `connecting to ${address} should fail`);
  return err.message;
}

test('EXTERNAL authentication with a real bus yields the bus GUID, and Hello a unique name', {
  skip,
}, async () => {
  const bus = await startPrivateBus();
  const socket = createConnection(socketPathOf(bus.address));
  await new Promise((resolve) => socket.once('connect', resolve));
  const guid = await authenticateExternal(socket);
  socket.destroy();
  assert.equal(guid, guidOf(bus.address));

  const conn = await DBusConnection.connect(bus.address);
  try {
    assert.match(conn.uniqueName, /^:1\.\d+$/);
    // The bus itself vouches for the uid it authenticated.
    assert.equal(await conn.busQuery('GetConnectionUnixUser', conn.uniqueName), UID);
  } finally {
    conn.close();
  }
});

test('unix:abstract= is refused with the reason, and passed over in an address list', { skip }, async () => {
  const name = `joulegate-test-${process.pid}-${Date.now()}`;
  const abstract = await startPrivateBus(TEST_BUS_POLICY, { listen: `unix:abstract=${name}` });
  assert.equal(
    await connectError(abstract.address),
    `cannot connect to the D-Bus bus at ${abstract.address}: unix:abstract= sockets cannot be reached from Node.js 20; give the bus a unix:path= address`,
  );
  const bus = await startPrivateBus();
  const conn = await DBusConnection.connect(`unix:abstract=${name};${bus.address}`);
  assert.match(conn.uniqueName, /^:1\.\d+$/);
  conn.close();
});

test('a bus that accepts only another mechanism: one error naming the bus and what it accepts', {
  skip,
}, async () => {
  const bus = await startPrivateBus(TEST_BUS_POLICY, { auth: 'ANONYMOUS' });
  const message = await connectError(bus.address);
  assert.equal(
    message,
    `cannot connect to the D-Bus bus at ${bus.address}: the bus rejected EXTERNAL authentication as uid ${UID} (it accepts: ANONYMOUS)`,
  );
});

test('a bus whose policy refuses our uid: one error naming the bus and the uid', { skip }, async () => {
  const bus = await startPrivateBus(`  <policy context="default">
    <deny user="*"/>
  </policy>`);
  const message = await connectError(bus.address);
  assert.ok(
    message.startsWith(`cannot connect to the D-Bus bus at ${bus.address}: the bus closed the connection`),
  );
  assert.match(message, new RegExp(`its policy may not admit uid ${UID}$`));
});

test('a missing socket and an unsupported address fail with the address named', { skip }, async () => {
  const missing = `unix:path=${join(tempDir(), 'nobody-listens')}`;
  assert.match(
    await connectError(missing),
    /^cannot connect to the D-Bus bus at unix:path=.*nobody-listens: connect ENOENT/,
  );
  assert.equal(
    await connectError('tcp:host=localhost,port=1'),
    'cannot connect to the D-Bus bus at tcp:host=localhost,port=1: only unix:path= addresses are supported',
  );
  assert.match(
    await connectError('unix:path=/tmp/%zz'),
    /at unix:path=\/tmp\/%zz: bad %-escape in "path=\/tmp\/%zz"/,
  );
  assert.equal(socketPathOf('tcp:host=x;unix:path=/tmp/a%2cb,guid=00'), '/tmp/a,b');
});

/**
 * A peer that is not a well-behaved bus: `answer` gets each chunk the client sends and the
 * server's side of the socket.
 */
async function fakeBus(answer: (chunk: string, peer: Socket) => void): Promise<string> {
  const path = join(tempDir('joulegate-fake-bus-'), 'socket');
  const server: Server = createServer((peer) => {
    peer.setEncoding('latin1');
    peer.on('data', (chunk: string) => answer(chunk, peer));
    peer.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  after(() => server.close());
  return `unix:path=${path}`;
}

const GUID = '0123456789abcdef0123456789abcdef';

test('a peer that hangs up mid-handshake', { skip }, async () => {
  const address = await fakeBus((_chunk, peer) => peer.end());
  assert.equal(
    await connectError(address),
    `cannot connect to the D-Bus bus at ${address}: the bus closed the connection during authentication`,
  );
});

test('a peer that sends an over-long line, with or without its end', { skip }, async () => {
  for (const tail of ['', '\r\n']) {
    const address = await fakeBus((_chunk, peer) => {
      peer.write(`REJECTED ${'x'.repeat(MAX_AUTH_LINE_BYTES)}${tail}`);
    });
    assert.equal(
      await connectError(address),
      `cannot connect to the D-Bus bus at ${address}: the bus sent a line longer than ${MAX_AUTH_LINE_BYTES} bytes`,
    );
  }
});

test('a peer that never answers: the connect timeout', { skip }, async () => {
  const address = await fakeBus(() => {});
  const started = performance.now();
  assert.equal(
    await connectError(address, 300),
    `cannot connect to the D-Bus bus at ${address}: no answer from the bus within 300 ms`,
  );
  assert.ok(performance.now() - started < 5000);
});

test('ERROR, a bad GUID and unknown commands are refused', { skip }, async () => {
  const cases: [string, string][] = [
    ['ERROR "unknown mechanism"\r\n', 'the bus answered ERROR: "unknown mechanism"'],
    ['OK not-a-guid\r\n', 'the bus answered OK with a bad GUID "not-a-guid"'],
    [`OK ${GUID}0\r\n`, `the bus answered OK with a bad GUID "${GUID}0"`],
    ['DATA 3132\r\n', 'unexpected answer during authentication: "DATA 3132"'],
    ['\u001b[2J\r\n', 'unexpected answer during authentication: "\\u001b[2J"'],
  ];
  for (const [line, reason] of cases) {
    const address = await fakeBus((_chunk, peer) => peer.write(line));
    assert.equal(await connectError(address), `cannot connect to the D-Bus bus at ${address}: ${reason}`);
  }
});

test('what the bus sends after OK in the same packet reaches the message layer', { skip }, async () => {
  // The client pipelines BEGIN and Hello; this peer answers both before it reads either.
  const helloReply = encodeMessage({
    type: MessageType.MethodReturn,
    flags: 1,
    serial: 1,
    replySerial: 1,
    signature: 's',
    body: [':1.42'],
  });
  let received = '';
  let sawBegin: () => void;
  const begun = new Promise<void>((resolve) => {
    sawBegin = resolve;
  });
  const address = await fakeBus((chunk, peer) => {
    received += chunk;
    if (received === `\0AUTH EXTERNAL ${Buffer.from(String(UID)).toString('hex')}\r\n`) {
      peer.write(Buffer.concat([Buffer.from(`OK ${GUID}\r\n`), helloReply]));
    }
    if (received.includes('\r\nBEGIN\r\n')) sawBegin();
  });
  const conn = await DBusConnection.connect(address, { timeoutMs: 5000 });
  assert.equal(conn.uniqueName, ':1.42');
  await begun;
  conn.close();
});
