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
