import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, test } from 'node:test';
import { DBusConnection } from '../../../src/ipc/dbus/connection.js';
import type { DecodedMessage } from '../../../src/ipc/dbus/wire.js';
import { startPrivateBus } from '../../helpers/dbus.js';
import { needsTool, requirements, whenMet } from '../../helpers/requirements.js';

const skip = requirements(needsTool('dbus-daemon'));

// Two connections on a private bus: `server` answers what `client` calls. The server's socket
// is watched at the stream layer, where each _write or _writev is one system call on the
// socket.
const bus = await whenMet(skip, () => startPrivateBus());
const server = await whenMet(skip, () => DBusConnection.connect(bus.address));
const client = await whenMet(skip, () => DBusConnection.connect(bus.address));
after(() => {
  if (skip) return;
  client.close();
  server.close();
});

/** Counts the write operations the server's socket makes from now on. */
function countWrites(conn: DBusConnection): { readonly count: number } {
  const socket = Reflect.get(conn, 'socket') as Socket & {
    _write: (...args: unknown[]) => void;
    _writev: (...args: unknown[]) => void;
  };
  const counter = { count: 0 };
  for (const method of ['_write', '_writev'] as const) {
    const original = socket[method];
    socket[method] = function (this: unknown, ...args: unknown[]) {
      counter.count++;
      return original.apply(this, args);
    };
  }
  return counter;
}

const call = (n: number) =>
  client.call({
    destination: server.uniqueName,
    path: '/t',
    interface: 't.T',
    member: 'Echo',
    signature: 'u',
    body: [n],
  });

test('replies made in one turn leave the connection in one write, each intact and in order', {
  skip,
}, async () => {
  const CALLS = 20;
  const held: DecodedMessage[] = [];
  server.onMethodCall((msg) => {
    held.push(msg);
    // All answered in one synchronous loop once the last has come, as a daemon answers the
    // calls of one read.
    if (held.length === CALLS) for (const m of held) server.reply(m, 'u', [(m.body[0] as number) * 2]);
  });
  const writes = countWrites(server);
  const answers = await Promise.all(Array.from({ length: CALLS }, (_, i) => call(i)));
  assert.deepEqual(
    answers,
    Array.from({ length: CALLS }, (_, i) => [i * 2]),
  );
  // One write for the twenty replies (one each before).
  assert.equal(writes.count, 1);
});

test('a reply sent in the same turn as close() still reaches its caller', { skip }, async () => {
  const third = await DBusConnection.connect(bus.address);
  third.onMethodCall((msg) => {
    third.reply(msg, 'u', [7]);
    third.close();
  });
  const answer = await client.call({
    destination: third.uniqueName,
    path: '/t',
    interface: 't.T',
    member: 'Echo',
    signature: 'u',
    body: [1],
    timeoutMs: 10_000,
  });
  assert.deepEqual(answer, [7]);
});
