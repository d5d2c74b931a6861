import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Inbox, MAX_HEADER_SIZE, type Screening } from '../../../src/ipc/dbus/inbox.js';
import {
  type DecodedMessage,
  encodeMessage,
  type MessageHeader,
  MessageType,
} from '../../../src/ipc/dbus/wire.js';

const call = (serial: number, member: string, signature = '', body: unknown[] = []) =>
  encodeMessage({
    type: MessageType.MethodCall,
    flags: 0,
    serial,
    path: '/io/github/geopm',
    member,
    signature,
    body: body as never,
  });

/** An inbox that records what it delivers and refuses; `screen` decides from the header. */
function recording(screen: (h: MessageHeader) => Screening = () => undefined) {
  const delivered: DecodedMessage[] = [];
  const refused: string[] = [];
  const screened: string[] = [];
  const inbox = new Inbox({
    screen: (header) => {
      screened.push(header.member ?? '');
      return screen(header);
    },
    deliver: (msg) => delivered.push(msg),
    refuse: (header, name, text) => refused.push(`${header.serial} ${name} ${text}`),
  });
  return { inbox, delivered, refused, screened };
}

/** Feeds `bytes` in chunks of `size`; `reused` chunks are overwritten right after each push. */
function feed(inbox: Inbox, bytes: Buffer, size: number, reused = false): void {
  const scratch = Buffer.alloc(size);
  for (let at = 0; at < bytes.length; at += size) {
    const piece = bytes.subarray(at, at + size);
    if (reused) {
      piece.copy(scratch);
      inbox.push(scratch.subarray(0, piece.length), true);
      scratch.fill(0xee);
    } else {
      inbox.push(Buffer.from(piece));
    }
  }
}

const names = (n: number, len: number) => Array.from({ length: n }, (_, i) => `${i}-`.padEnd(len, 'n'));

for (const size of [1, 7, 4096, 1 << 20]) {
  for (const reused of [false, true]) {
    test(`messages arrive whole from chunks of ${size} bytes${reused ? ' read into one reused buffer' : ''}`, () => {
      const big = names(2000, 100); // about 210 kB: copied into one buffer as it arrives
      const stream = Buffer.concat([
        call(1, 'Small', 's', ['x']),
        call(2, 'Big', 'as', [big]),
        call(3, 'Small', 'sii', ['TIME', 0, 0]),
      ]);
      const { inbox, delivered } = recording();
      feed(inbox, stream, size, reused);
      assert.deepEqual(
        delivered.map((m) => m.serial),
        [1, 2, 3],
      );
      assert.deepEqual(delivered[1]!.body, [big]);
      assert.deepEqual(delivered[2]!.body, ['TIME', 0, 0]);
    });
  }
}

test('a refused message is answered once from its header and its body is skipped unread', () => {
  const stream = Buffer.concat([
    call(1, 'Refused', 's', ['x'.repeat(300_000)]),
    call(2, 'Dropped', 's', ['y'.repeat(70_000)]),
    call(3, 'Kept', 's', ['z']),
  ]);
  const { inbox, delivered, refused, screened } = recording((h) => {
    if (h.member === 'Refused') return { refuse: { errorName: 'E', text: `${h.bodyLength} bytes` } };
    if (h.member === 'Dropped') return { drop: true };
    return undefined;
  });
  feed(inbox, stream, 1000);
  assert.deepEqual(screened, ['Refused', 'Dropped', 'Kept']);
  assert.equal(refused.length, 1);
  assert.match(refused[0]!, /^1 E 30000[0-9] bytes$/);
  assert.deepEqual(
    delivered.map((m) => [m.serial, m.body]),
    [[3, ['z']]],
  );
});

test('a header longer than the cap is discarded without being decoded', () => {
  // The header's field array claims MAX_HEADER_SIZE + 8 bytes of fields.
  const huge = Buffer.alloc(16 + MAX_HEADER_SIZE + 8);
  huge.write('l', 0, 'latin1');
  huge[1] = MessageType.MethodCall;
  huge[3] = 1;
  huge.writeUInt32LE(0, 4);
  huge.writeUInt32LE(9, 8);
  huge.writeUInt32LE(MAX_HEADER_SIZE + 8, 12);
  const { inbox, delivered, screened } = recording();
  feed(inbox, Buffer.concat([huge, call(2, 'After')]), 65536);
  assert.deepEqual(screened, ['After']);
  assert.deepEqual(
    delivered.map((m) => m.serial),
    [2],
  );
});

test('a stream that cannot be framed throws', () => {
  const { inbox } = recording();
  assert.throws(() => inbox.push(Buffer.from('Xnot a D-Bus message at all')), /endianness/);
});
