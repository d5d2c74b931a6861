import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  InvalidSignatureError,
  parseSignature,
  parseSingleType,
  parseTypes,
} from '../../../src/ipc/dbus/signature.js';
import {
  decodeMessage,
  encodeBody,
  encodeMessage,
  MessageType,
  type WireValue,
} from '../../../src/ipc/dbus/wire.js';

/** The signature written back from its parsed types: parsing must lose nothing. */
function unparse(sig: string): string {
  const closing: Record<string, string> = { '(': ')', '{': '}' };
  const write = (t: { type: string; children: readonly { type: string }[] }): string =>
    t.type + t.children.map((c) => write(c as typeof t)).join('') + (closing[t.type] ?? '');
  return parseSignature(sig).map(write).join('');
}

test('every basic type, variants, arrays, structs and dict entries parse', () => {
  const valid = [
    '',
    'ybnqiuxtdhsog',
    'v',
    'as',
    'aas',
    'a{sv}',
    'a{ya{sv}}',
    'a{oa{sa{sv}}}',
    '(i)',
    '((i)s)',
    'a(yv)',
    'aa{sa(ii)}',
    'a{ia(sv)}',
    '(sa{sv}as)v',
  ];
  for (const sig of valid) assert.equal(unparse(sig), sig, sig);
  assert.deepEqual(parseSignature('a{sv}(id)'), [
    {
      type: 'a',
      children: [
        {
          type: '{',
          children: [
            { type: 's', children: [] },
            { type: 'v', children: [] },
          ],
        },
      ],
    },
    {
      type: '(',
      children: [
        { type: 'i', children: [] },
        { type: 'd', children: [] },
      ],
    },
  ]);
});

test('the specification limits hold exactly: 255 bytes, 32 nested arrays, 32 nested structs', () => {
  const arrays = (n: number) => `${'a'.repeat(n)}y`;
  const structs = (n: number) => `${'('.repeat(n)}y${')'.repeat(n)}`;
  assert.equal(parseSignature('y'.repeat(255)).length, 255);
  assert.equal(unparse(arrays(32)), arrays(32));
  assert.equal(unparse(structs(32)), structs(32));
  // Both limits at once: 32 arrays of 32 structs is the deepest valid type.
  const deepest = `${'a'.repeat(32)}${structs(32)}`;
  assert.equal(unparse(deepest), deepest);
  // The limits count nesting, not occurrences.
  assert.equal(parseSignature('ay'.repeat(40)).length, 40);
  assert.equal(parseSignature('(y)'.repeat(40)).length, 40);

  assert.throws(() => parseSignature('y'.repeat(256)), /256 characters, more than 255/);
  assert.throws(() => parseSignature(arrays(33)), /more than 32 nested arrays at position 32/);
  assert.throws(() => parseSignature(structs(33)), /more than 32 nested structs at position 32/);
  assert.throws(() => parseSignature(`a${structs(33)}`), /more than 32 nested structs/);
  assert.throws(
    () => parseSignature(`${'a{s'.repeat(32)}a{sy${'}'.repeat(33)}`),
    /more than 32 nested arrays/,
  );
});

test('malformed signatures fail with the reason and where', () => {
  const invalid: [string, RegExp][] = [
    ['a', /array 'a' without an element type at position 0/],
    ['aa', /array 'a' without an element type at position 1/],
    ['ia', /array 'a' without an element type at position 1/],
    ['()', /empty struct at position 0/],
    ['a()', /empty struct at position 1/],
    ['(', /struct '\(' is not closed at position 0/],
    ['(ii', /struct '\(' is not closed at position 0/],
    ['((i)', /struct '\(' is not closed at position 0/],
    [')', /unexpected '\)' at position 0/],
    ['i)', /unexpected '\)' at position 1/],
    ['(i}', /unexpected '}' at position 2/],
    ['}', /unexpected '}' at position 0/],
    ['{sv}', /dict entry '\{' outside an array at position 0/],
    ['a({sv})', /dict entry '\{' outside an array at position 2/],
    ['(a{sv}{sv})', /dict entry '\{' outside an array at position 6/],
    ['a{vs}', /dict entry key is not a basic type at position 2/],
    ['a{(i)s}', /dict entry key is not a basic type/],
    ['a{ass}', /dict entry key is not a basic type/],
    ['a{a{ss}s}', /dict entry key is not a basic type/],
    ['a{}', /dict entry key is not a basic type/],
    ['a{s}', /dict entry without a value type at position 3/],
    ['a{sss}', /dict entry with more than two types at position 4/],
    ['a{sv', /dict entry '\{' is not closed at position 1/],
    ['a{', /dict entry '\{' is not closed/],
  ];
  for (const [sig, reason] of invalid) {
    assert.throws(
      () => parseSignature(sig),
      (err: Error) => err instanceof InvalidSignatureError && reason.test(err.message),
      sig,
    );
  }
  // Reserved codes (r, e, m, *, ?, @, &, ^) and anything else are not types on the wire.
  for (const code of ['r', 'e', 'm', '*', '?', '@', '&', '^', 'z', ' ', '\0', 'é', '\u{1F600}']) {
    assert.throws(
      () => parseSignature(`i${code}`),
      /unknown type code .* at position 1/,
      JSON.stringify(code),
    );
  }
});

test('the error shows the signature escaped and cut short', () => {
  assert.throws(
    () => parseSignature('a\n\u001b[2Jz'),
    (err: Error) =>
      err.message === 'invalid D-Bus signature "a\\n\\u001b[2Jz": unknown type code "\\n" at position 1',
  );
  assert.throws(
    () => parseSignature(`${'i'.repeat(300)}`),
    (err: Error) => err.message.includes(`"${'i'.repeat(64)}"`) && !err.message.includes('i'.repeat(65)),
  );
});

test('a variant holds exactly one complete type', () => {
  assert.equal(parseSingleType('a{sv}').type, 'a');
  assert.throws(() => parseSingleType('ii'), /a variant holds one complete type, not 2/);
  assert.throws(() => parseSingleType(''), /not 0/);
  assert.throws(() => encodeBody('v', [['ii', [1, 2]]]), /one complete type/);
});

test('the parse cache neither changes results nor keeps failures', () => {
  assert.equal(parseTypes('a{sv}'), parseTypes('a{sv}'));
  assert.throws(() => parseTypes('a{vs}'), InvalidSignatureError);
  assert.throws(() => parseTypes('a{vs}'), InvalidSignatureError);
  // More distinct signatures than the cache holds: every one still parses to itself.
  for (let n = 1; n <= 600; n++) assert.equal(parseTypes(`${'i'.repeat(n % 255)}s`).length, (n % 255) + 1);
  assert.equal(parseTypes('a{sv}')[0]!.children[0]!.type, '{');
});

function messageWithBody(signature: string, body: WireValue[]): Buffer {
  return encodeMessage({
    type: MessageType.MethodCall,
    flags: 0,
    serial: 1,
    path: '/',
    member: 'M',
    signature,
    body,
  });
}

test('a hostile signature in a received body or variant is a body error, not a throw', () => {
  // Body signature "yy" rewritten to "a{" in the header.
  const body = Buffer.from(messageWithBody('yy', [1, 2]));
  const at = body.indexOf(Buffer.from([2, 0x79, 0x79, 0]));
  body.write('a{', at + 1, 'latin1');
  const msg = decodeMessage(body);
  assert.equal(msg.signature, 'a{');
  assert.match(msg.bodyError ?? '', /invalid D-Bus signature "a\{": dict entry '\{' is not closed/);

  // A variant whose own signature is rewritten from "y" to "{".
  const variant = Buffer.from(messageWithBody('v', [['y', 5]]));
  const v = variant.lastIndexOf(Buffer.from([1, 0x79, 0, 5]));
  variant[v + 1] = '{'.charCodeAt(0);
  assert.match(decodeMessage(variant).bodyError ?? '', /dict entry '\{' outside an array/);

  // Variants nested past what the reader follows are refused, not followed.
  let nested: WireValue = ['y', 1];
  for (let k = 0; k < 70; k++) nested = ['v', nested];
  assert.match(decodeMessage(messageWithBody('v', [nested])).bodyError ?? '', /nested too deeply/);
});
