import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { test } from 'node:test';
import { authenticateExternal } from '../../src/ipc/dbus/auth.js';
import { socketPathOf } from '../../src/ipc/dbus/connection.js';
import { ERROR_NAMES } from '../../src/ipc/dbus/interface.js';
import {
  type DecodedMessage,
  decodeMessage,
  encodeMessage,
  frameSize,
  type Message,
  MessageType,
  type WireValue,
} from '../../src/ipc/dbus/wire.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { BUS_NAME, ServiceHarness, STRICT_ANSWERS } from './harness.js';

const skip = needsDaemon();

// Calls of one connection are answered as if each had waited for the one before: a raw client
// that writes Hello and several calls in one write() gets the answers a patient client gets.

const h = new ServiceHarness(STRICT_ANSWERS);
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());

const hello: Omit<Message, 'serial'> = {
  type: MessageType.MethodCall,
  flags: 0,
  destination: 'org.freedesktop.DBus',
  path: '/org/freedesktop/DBus',
  interface: 'org.freedesktop.DBus',
  member: 'Hello',
  body: [],
};

function geopm(member: string, signature = '', body: WireValue[] = []): Omit<Message, 'serial'> {
  const path = '/io/github/geopm';
  return { type: MessageType.MethodCall, flags: 0, destination: BUS_NAME, path, member, signature, body };
}

/**
 * Connects a fresh socket to the bus, writes every message (serials 1, 2, …) in one write()
 * and resolves with their replies in the order they arrived.
 */
async function inOneWrite(messages: Omit<Message, 'serial'>[]): Promise<DecodedMessage[]> {
  const socket = createConnection(socketPathOf(h.bus.address));
  await once(socket, 'connect');
  await authenticateExternal(socket);
  const replies: DecodedMessage[] = [];
  let inbox = Buffer.alloc(0);
  const done = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      inbox = Buffer.concat([inbox, chunk]);
      for (let size = frameSize(inbox); size > 0 && inbox.length >= size; size = frameSize(inbox)) {
        const msg = decodeMessage(inbox.subarray(0, size));
        inbox = inbox.subarray(size);
        const isReply = msg.type === MessageType.MethodReturn || msg.type === MessageType.Error;
        if (isReply) replies.push(msg);
        if (replies.length === messages.length) resolve();
      }
    });
  });
  socket.resume();
  socket.write(Buffer.concat(messages.map((m, i) => encodeMessage({ ...m, serial: i + 1 }))));
  try {
    await done;
  } finally {
    socket.destroy();
  }
  return replies;
}

const outcome = (msg: DecodedMessage) => (msg.type === MessageType.Error ? msg.errorName : 'ok');

test('Hello, OpenSession, reads, CloseSession and a read sent in one write are answered in order, as sent', {
  skip,
}, async () => {
  const read = geopm('PlatformReadSignal', 'sii', ['FILECTL::COUNTER', 0, 0]);
  const calls = [hello, geopm('PlatformOpenSession'), read, read, geopm('PlatformCloseSession'), read];
  for (let round = 0; round < 10; round++) {
    const replies = await inOneWrite(calls);
    assert.deepEqual(
      replies.map((r) => r.replySerial),
      calls.map((_, i) => i + 1),
      `round ${round}: replies out of order`,
    );
    assert.deepEqual(
      replies.map(outcome),
      ['ok', 'ok', 'ok', 'ok', 'ok', ERROR_NAMES.NoSession],
      `round ${round}: ${replies.map((r) => JSON.stringify(r.body)).join(' ')}`,
    );
    assert.equal(typeof replies[2]!.body[0], 'number');
  }
});

test('a write control sent right after OpenSession in one write lands before the reads that follow it', {
  skip,
}, async () => {
  const limit = (value: number) => geopm('PlatformWriteControl', 'siid', ['FILECTL::LIMIT', 1, 0, value]);
  const readLimit = geopm('PlatformReadSignal', 'sii', ['FILECTL::LIMIT', 1, 0]);
  const replies = await inOneWrite([
    hello,
    geopm('PlatformOpenSession'),
    limit(71),
    readLimit,
    limit(72),
    readLimit,
    geopm('PlatformCloseSession'),
  ]);
  assert.deepEqual(replies.map(outcome), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
  assert.deepEqual([replies[3]!.body[0], replies[5]!.body[0]], [71, 72]);
});
