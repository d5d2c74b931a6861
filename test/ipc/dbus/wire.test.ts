import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeMessage,
  encodeBody,
  encodeMessage,
  frameSize,
  MessageType,
} from '../../../src/ipc/dbus/wire.js';
import { seededRandom } from '../../helpers/random.js';

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

/** The bytes of body string `text` as D-Bus writes it: UTF-8 length, UTF-8 bytes, NUL. */
function expectedString(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32LE(bytes.length);
  return Buffer.concat([length, bytes, Buffer.from([0])]);
}

test('strings are written as UTF-8 whether short ASCII (copied per byte) or not', () => {
  const ascii = (n: number) =>
    Array.from({ length: n }, (_, i) => String.fromCharCode(1 + (i % 127))).join('');
  const cases = [
    '',
    'a',
    '\x7f',
    ascii(255),
    ascii(256),
    ascii(257),
    ascii(1000),
    'é',
    'aé',
    `${ascii(100)}🙂`,
  ];
  for (const text of cases)
    assert.deepEqual(encodeBody('s', [text]), expectedString(text), JSON.stringify(text));
  // Only the length field and the bytes differ for a lone surrogate: Buffer writes U+FFFD.
  assert.deepEqual(encodeBody('s', ['a\ud800']), expectedString('a\ufffd'));
  // A signature's length is one byte, whichever way its text is copied.
  assert.deepEqual(encodeBody('g', ['a(ii)']), Buffer.from([5, ...Buffer.from('a(ii)'), 0]));
  for (const text of ['\0', 'ab\0', `${ascii(300)}\0`, 'é\0', '\0é'])
    assert.throws(() => encodeBody('s', [text]), /NUL/, JSON.stringify(text));
});

test('32-bit integers are written in little-endian two’s complement at their bounds', () => {
  const body = encodeBody('iiiuuu', [-1, -(2 ** 31), 2 ** 31 - 1, 0, 2 ** 32 - 1, 0x01020304]);
  const words = Array.from({ length: 6 }, (_, i) => body.readUInt32LE(4 * i));
  assert.deepEqual(words, [0xffffffff, 0x80000000, 0x7fffffff, 0, 0xffffffff, 0x01020304]);
  assert.deepEqual(encodeBody('y', [255]), Buffer.from([255]));
  assert.throws(() => encodeBody('u', [2 ** 32]), /does not fit D-Bus type 'u'/);
  assert.throws(() => encodeBody('y', [256]), /does not fit D-Bus type 'y'/);
  // Read back from a little-endian message: the top bit set still gives a positive number.
  const buf = encodeMessage({
    type: MessageType.MethodCall,
    flags: 0,
    serial: 2 ** 32 - 1,
    path: '/a',
    member: 'M',
    signature: 'uui',
    body: [0x80000000, 0xffffffff, -(2 ** 31)],
  });
  const msg = decodeMessage(buf);
  assert.deepEqual(msg.body, [0x80000000, 0xffffffff, -(2 ** 31)]);
  assert.equal(msg.serial, 2 ** 32 - 1);
  // The header's own bytes are checked too.
  const header = { type: MessageType.MethodCall, flags: 0, serial: 1, path: '/a', member: 'M', body: [] };
  assert.throws(() => encodeMessage({ ...header, type: 256 as MessageType }), /does not fit D-Bus type 'y'/);
  assert.throws(() => encodeMessage({ ...header, flags: -1 }), /does not fit D-Bus type 'y'/);
});

test('a signature is at most 255 bytes, counted in bytes on either string path', () => {
  const ascii255 = 'i'.repeat(255);
  assert.equal(encodeBody('g', [ascii255]).length, 257);
  assert.throws(() => encodeBody('g', ['i'.repeat(256)]), /longer than 255 bytes/);
  // 128 code units, 256 bytes: over the limit although shorter than it in code units.
  assert.throws(() => encodeBody('g', ['é'.repeat(128)]), /longer than 255 bytes/);
});

test('strings the decoder keeps for reuse come back as sent, also where they share a slot', () => {
  const random = seededRandom(27);
  const pick = (n: number) => Math.floor(random() * n);
  const made: string[] = [];
  for (let i = 0; i < 3000; i++) {
    if (made.length > 0 && random() < 0.4) {
      made.push(made[pick(made.length)]!); // seen before: a hit must still be this string
      continue;
    }
    const length = [0, 1, 63, 64, 65][pick(5)]! + (random() < 0.5 ? 0 : pick(70));
    made.push(Array.from({ length }, () => String.fromCharCode(1 + pick(127))).join(''));
  }
  // Same length, first, middle and last byte, different elsewhere: one slot, taken in turns.
  for (let i = 0; i < 200; i++) made.push(`a${String.fromCharCode(65 + (i % 26))}bbcz`);
  for (let at = 0; at < made.length; at += 100) {
    const chunk = made.slice(at, at + 100);
    const buf = encodeMessage({
      type: MessageType.MethodCall,
      flags: 0,
      serial: 1,
      path: '/a',
      member: chunk[0] && /^[A-Za-z]\w*$/.test(chunk[0]) ? chunk[0] : 'M',
      signature: 'as',
      body: [chunk],
    });
    assert.deepEqual(decodeMessage(buf).body, [chunk]);
  }
});

test('bytes that are not ASCII decode as Buffer decodes UTF-8, replacement characters included', () => {
  const samples = [
    Buffer.from('é'),
    Buffer.from([0x61, 0xff, 0x62]), // invalid UTF-8
    Buffer.from([0xe4, 0xb8]), // truncated sequence
    Buffer.from('ab🙂'),
    Buffer.alloc(65, 0x61), // over the kept length
  ];
  for (const bytes of samples) {
    const buf = encodeMessage({
      type: MessageType.MethodCall,
      flags: 0,
      serial: 1,
      path: '/a',
      member: 'M',
      signature: 's',
      body: ['x'.repeat(bytes.length)],
    });
    // Same length in bytes: put the sample's bytes where the string's were.
    const at = buf.length - bytes.length - 1;
    bytes.copy(buf, at);
    for (let i = 0; i < 2; i++) assert.deepEqual(decodeMessage(buf).body, [bytes.toString('utf8')]);
  }
});

test('a big-endian message decodes: its fixed header, fields and body', () => {
  const parts: number[] = [];
  const pad = (n: number) => {
    while (parts.length % n) parts.push(0);
  };
  const u32 = (v: number) => {
    pad(4);
    parts.push(v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
  };
  const str = (v: string) => {
    u32(v.length);
    parts.push(...Buffer.from(v), 0);
  };
  const field = (code: number, sig: string, write: () => void) => {
    pad(8);
    parts.push(code, 1, sig.charCodeAt(0), 0);
    write();
  };
  parts.push(0x42, MessageType.MethodReturn, 0, 1);
  u32(0); // body length, patched below
  u32(0x01020304); // serial
  u32(0); // fields length, patched below
  const fieldsAt = parts.length;
  field(5, 'u', () => u32(0xfffffffe));
  field(6, 's', () => str(':1.7'));
  field(8, 'g', () => parts.push(2, ...Buffer.from('us'), 0));
  const fieldsLength = parts.length - fieldsAt;
  pad(8);
  const bodyAt = parts.length;
  u32(4000000000);
  str('big');
  const buf = Buffer.from(parts);
  buf.writeUInt32BE(buf.length - bodyAt, 4);
  buf.writeUInt32BE(fieldsLength, 12);
  assert.equal(frameSize(buf), buf.length);
  const msg = decodeMessage(buf);
  assert.equal(msg.serial, 0x01020304);
  assert.equal(msg.replySerial, 0xfffffffe);
  assert.equal(msg.destination, ':1.7');
  assert.deepEqual(msg.body, [4000000000, 'big']);
  assert.equal(msg.bodyError, undefined);
});
