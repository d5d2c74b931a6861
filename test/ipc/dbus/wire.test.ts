import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeMessage,
  encodeBody,
  encodeMessage,
  frameSize,
  MessageType,
} from '../../../src/ipc/dbus/wire.js';

test('messages round-trip, including NaN and ±Inf doubles and nested structs', () => {
  const body = ['name', -7, Number.NaN, Number.POSITIVE_INFINITY, [[1, 2, 'x']], [['a', 'b'], []]];
  const buf = encodeMessage({
    type: MessageType.MethodCall,
    flags: 0,
    serial: 9,
    path: '/io/github/geopm',
    member: 'M',
    signature: 'sidda(iis)(asas)',
    body,
  });
  assert.equal(frameSize(buf), buf.length);
  const msg = decodeMessage(buf);
  assert.equal(msg.member, 'M');
  assert.equal(msg.serial, 9);
  assert.deepEqual(msg.body, body);
  assert.equal(msg.bodyError, undefined);
});

test('a body that does not fit its signature is reported, not thrown', () => {
  const buf = encodeMessage({
    type: MessageType.MethodCall,
    flags: 0,
    serial: 1,
    path: '/',
    member: 'M',
    signature: 's',
    body: ['abc'],
  });
  // Same header layout, but the signature now claims a variant: the string's bytes are garbage as one.
  const broken = Buffer.from(buf);
  const at = broken.lastIndexOf(Buffer.from([1, 0x73, 0])); // signature field value: len 1, "s", NUL
  broken[at + 1] = 'v'.charCodeAt(0);
  const msg = decodeMessage(broken);
  assert.equal(msg.signature, 'v');
  assert.match(msg.bodyError ?? '', /./);
});

test('encoding refuses values that do not fit the signature', () => {
  assert.throws(() => encodeBody('i', [2 ** 31]), /does not fit D-Bus type 'i'/);
  assert.throws(() => encodeBody('s', [3]), /does not fit/);
  assert.throws(() => encodeBody('s', ['a\0b']), /NUL/);
  assert.throws(() => encodeBody('ss', ['a']), /has 2 values/);
});

test('strings of every UTF-8 width round-trip in header fields and the body, their lengths in bytes', () => {
  const body = ['é🙂中', '', '\ud800']; // a lone surrogate is written as U+FFFD (3 bytes)
  const buf = encodeMessage({
    type: MessageType.MethodCall,
    flags: 0,
    serial: 3,
    path: '/io/github/geopm',
    member: 'Mé',
    destination: 'io.github.geopm',
    signature: 'sss',
    body,
  });
  assert.equal(frameSize(buf), buf.length);
  const msg = decodeMessage(buf);
  assert.equal(msg.member, 'Mé');
  assert.deepEqual(msg.body, ['é🙂中', '', '\ufffd']);
  // The first body string's length field: 2 + 4 + 3 bytes.
  const first = buf.indexOf(Buffer.from('é🙂中', 'utf8'));
  assert.equal(buf.readUInt32LE(first - 4), 9);
});

test('every byte of a marshalled message is written (its buffer is not zeroed first)', () => {
  const message = {
    type: MessageType.MethodReturn,
    flags: 1,
    serial: 77,
    replySerial: 5,
    destination: ':1.42',
    signature: 'yd(ys)',
    body: [7, 1.5, [2, 'abc']] as [number, number, [number, string]],
  };
  // Fill Node's shared pool with one byte, then another: any byte the encoder skipped differs.
  const dirtied = (fill: number) => {
    for (let i = 0; i < 64; i++) Buffer.allocUnsafe(128).fill(fill);
    return Buffer.from(encodeMessage(message));
  };
  assert.deepEqual(dirtied(0xff), dirtied(0x00));
  assert.deepEqual(decodeMessage(dirtied(0xa5)).body, message.body);
});

test('decoded messages share one shape whichever header fields they carry', () => {
  const withSender = decodeMessage(
    encodeMessage({
      type: MessageType.Signal,
      flags: 0,
      serial: 1,
      path: '/a',
      interface: 'a.b',
      member: 'S',
      sender: ':1.1',
      body: [],
    }),
  );
  const without = decodeMessage(
    encodeMessage({
      type: MessageType.MethodCall,
      flags: 0,
      serial: 2,
      path: '/a',
      member: 'M',
      signature: 's',
      body: ['x'],
    }),
  );
  assert.deepEqual(Object.keys(withSender), Object.keys(without));
  assert.equal(without.sender, undefined);
  assert.equal(withSender.sender, ':1.1');
});

test('a message without a signature is marshalled without reading its body', () => {
  // JavaScript callers (test clients, scripts) leave `body` out of calls such as Hello.
  const hello = {
    type: MessageType.MethodCall,
    flags: 0,
    serial: 1,
    path: '/org/freedesktop/DBus',
    member: 'Hello',
  };
  const msg = decodeMessage(encodeMessage(hello as Parameters<typeof encodeMessage>[0]));
  assert.equal(msg.member, 'Hello');
  assert.deepEqual(msg.body, []);
});
