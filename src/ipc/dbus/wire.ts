import { parseSingleType, parseTypes, type SignatureType } from './signature.js';

/**
 * D-Bus wire format (little-endian out, either endianness in) for the types joulegate's
 * interface uses. Values: numbers for y/b/n/q/i/u/d (b also boolean), number or bigint for x/t,
 * strings for s/o/g, arrays for arrays and structs, [signature, value] for variants.
 * Doubles carry NaN and ±Inf unchanged: a failed read is NaN on the wire, as in GEOPM.
 */
export type WireValue = number | bigint | string | boolean | WireValue[];

export enum MessageType {
  MethodCall = 1,
  MethodReturn = 2,
  Error = 3,
  Signal = 4,
}

export const NO_REPLY_EXPECTED = 0x1;

export interface Message {
  type: MessageType;
  flags: number;
  serial: number;
  path?: string;
  interface?: string;
  member?: string;
  errorName?: string;
  replySerial?: number;
  destination?: string;
  sender?: string;
  signature?: string;
  body: WireValue[];
}

/** Header field codes and their types (D-Bus specification, "Message Format"). */
const HEADER_FIELDS: readonly [keyof Message, number, string][] = [
  ['path', 1, 'o'],
  ['interface', 2, 's'],
  ['member', 3, 's'],
  ['errorName', 4, 's'],
  ['replySerial', 5, 'u'],
  ['destination', 6, 's'],
  ['sender', 7, 's'],
  ['signature', 8, 'g'],
];

/** Each header field's key by its code (index), for decoding. */
const FIELD_BY_CODE: (keyof Message | undefined)[] = [];
for (const [key, code] of HEADER_FIELDS) FIELD_BY_CODE[code] = key;

/** Each header field's value type, parsed once. */
const FIELD_TYPES = HEADER_FIELDS.map(([, , type]) => parseSingleType(type));

/** Largest message the D-Bus specification allows (128 MiB). */
export const MAX_MESSAGE_SIZE = 128 * 1024 * 1024;

function alignment(type: string): number {
  switch (type) {
    case 'y':
    case 'g':
    case 'v':
      return 1;
    case 'n':
    case 'q':
      return 2;
    case 'x':
    case 't':
    case 'd':
    case '(':
    case '{':
      return 8;
    default:
      return 4;
  }
}

/** Longest string written a code unit at a time (longer ones are rare: Buffer's encoder). */
const ASCII_COPY_LIMIT = 256;

/**
 * `text`'s length when it is short ASCII text without NUL (one byte per code unit in UTF-8),
 * else -1 (NUL included: the caller's check names it).
 */
function asciiLength(text: string): number {
  const n = text.length;
  if (n > ASCII_COPY_LIMIT) return -1;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0 || c > 0x7f) return -1;
  }
  return n;
}

/**
 * Marshals into one growing buffer. Its memory is not zeroed (allocUnsafe: small ones are slices
 * of Node's shared pool, not an allocation each): every byte up to `length` is written, padding
 * included.
 */
class Writer {
  private buf = Buffer.allocUnsafe(256);
  length = 0;

  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  align(n: number): void {
    const pad = (n - (this.length % n)) % n;
    this.ensure(pad);
    // At most 7 bytes: a loop, not Buffer.fill's call into C++.
    for (let i = 0; i < pad; i++) this.buf[this.length++] = 0;
  }

  // The writes below are byte by byte: Buffer's writeUInt*() check the value and offset again
  // (here both are known to fit), which was a third of a small message's encoding.

  /** A byte (0–255, checked by the caller). */
  u8(v: number): void {
    this.ensure(1);
    this.buf[this.length++] = v;
  }

  /** A 32-bit word at `offset` (room made by the caller), little endian; signed values too. */
  u32At(offset: number, v: number): void {
    const b = this.buf;
    b[offset] = v;
    b[offset + 1] = v >>> 8;
    b[offset + 2] = v >>> 16;
    b[offset + 3] = v >>> 24;
  }

  fixed(type: string, v: WireValue): void {
    this.align(alignment(type));
    this.ensure(8);
    const b = this.buf;
    const o = this.length;
    switch (type) {
      case 'y':
        b[o] = intIn(v, 0, 0xff, type);
        this.length += 1;
        return;
      case 'b':
        b.writeUInt32LE(v === true || v === 1 ? 1 : v === false || v === 0 ? 0 : badValue(type, v), o);
        this.length += 4;
        return;
      case 'n':
        b.writeInt16LE(intIn(v, -0x8000, 0x7fff, type), o);
        this.length += 2;
        return;
      case 'q':
        b.writeUInt16LE(intIn(v, 0, 0xffff, type), o);
        this.length += 2;
        return;
      case 'i':
        this.u32At(o, intIn(v, -0x80000000, 0x7fffffff, type));
        this.length += 4;
        return;
      case 'u':
        this.u32At(o, intIn(v, 0, 0xffffffff, type));
        this.length += 4;
        return;
      case 'x':
        b.writeBigInt64LE(BigInt(typeof v === 'bigint' ? v : intIn(v, -(2 ** 53), 2 ** 53, type)), o);
        this.length += 8;
        return;
      case 't':
        b.writeBigUInt64LE(BigInt(typeof v === 'bigint' ? v : intIn(v, 0, 2 ** 53, type)), o);
        this.length += 8;
        return;
      case 'd':
        if (typeof v !== 'number') badValue(type, v);
        b.writeDoubleLE(v as number, o);
        this.length += 8;
        return;
      default:
        throw new TypeError(`unsupported D-Bus type '${type}'`);
    }
  }

  /**
   * Written in place: its UTF-8 length first, then the text (no intermediate Buffer). ASCII text
   * (names, paths, signatures: nearly every string a message carries) is copied a code unit per
   * byte here, where Buffer's UTF-8 encoder costs a call into C++ per string.
   */
  string(type: string, v: WireValue): void {
    if (typeof v !== 'string') badValue(type, v);
    const text = v as string;
    const ascii = asciiLength(text);
    // In UTF-8 only U+0000 encodes as a NUL byte.
    if (ascii < 0 && text.includes('\0')) throw new TypeError('D-Bus strings cannot contain NUL');
    const size = ascii >= 0 ? ascii : Buffer.byteLength(text, 'utf8');
    if (type === 'g') {
      if (size > 255) throw new TypeError('signature longer than 255 bytes');
      this.u8(size);
    } else {
      this.align(4);
      this.ensure(4);
      this.u32At(this.length, size);
      this.length += 4;
    }
    this.ensure(size + 1);
    const b = this.buf;
    if (ascii >= 0) {
      const at = this.length;
      for (let i = 0; i < size; i++) b[at + i] = text.charCodeAt(i);
      this.length += size;
    } else {
      this.length += b.write(text, this.length, size, 'utf8');
    }
    b[this.length++] = 0;
  }

  value(node: SignatureType, v: WireValue): void {
    switch (node.type) {
      case 's':
      case 'o':
      case 'g':
        this.string(node.type, v);
        return;
      case 'a': {
        if (!Array.isArray(v)) badValue('a', v);
        this.align(4);
        const lengthAt = this.length;
        this.fixed('u', 0);
        const child = node.children[0]!;
        this.align(alignment(child.type));
        const start = this.length;
        for (const item of v as WireValue[]) this.value(child, item);
        this.u32At(lengthAt, this.length - start);
        return;
      }
      case '(':
      case '{': {
        if (!Array.isArray(v) || v.length !== node.children.length) badValue(node.type, v);
        this.align(8);
        node.children.forEach((c, i) => {
          this.value(c, (v as WireValue[])[i]!);
        });
        return;
      }
      case 'v': {
        if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'string') badValue('v', v);
        const [sig, inner] = v as [string, WireValue];
        this.string('g', sig);
        this.value(parseSingleType(sig), inner);
        return;
      }
      default:
        this.fixed(node.type, v);
    }
  }

  result(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function badValue(type: string, v: unknown): never {
  const shown = typeof v === 'string' ? JSON.stringify(v.slice(0, 40)) : String(v).slice(0, 40);
  throw new TypeError(`value ${shown} does not fit D-Bus type '${type}'`);
}

function intIn(v: WireValue, lo: number, hi: number, type: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) badValue(type, v);
  return v as number;
}

/** Marshals a body (without the message header) for `signature`. */
export function encodeBody(signature: string, body: readonly WireValue[]): Buffer {
  const w = new Writer();
  writeBody(w, bodyTypes(signature, body), body);
  return w.result();
}

/** The parsed types of `signature`, checked to be as many as the body's values. */
function bodyTypes(signature: string, body: readonly WireValue[]): readonly SignatureType[] {
  const tree = parseTypes(signature);
  if (tree.length !== body.length) {
    throw new TypeError(`signature '${signature}' has ${tree.length} values, body has ${body.length}`);
  }
  return tree;
}

function writeBody(w: Writer, tree: readonly SignatureType[], body: readonly WireValue[]): void {
  tree.forEach((node, i) => {
    w.value(node, body[i]!);
  });
}

export function encodeMessage(msg: Message): Buffer {
  const signature = msg.signature ?? '';
  // No signature, no body: whatever `body` holds (or whether it is there at all) is not read.
  const tree = signature === '' ? [] : bodyTypes(signature, msg.body);
  // Header and body in one buffer: the body starts 8-aligned, so its alignment counted from the
  // message's start is the same as from its own; its length is filled in once written.
  const w = new Writer();
  w.u8(0x6c); // 'l': little endian
  w.u8(intIn(msg.type, 0, 0xff, 'y'));
  w.u8(intIn(msg.flags, 0, 0xff, 'y'));
  w.u8(1); // protocol version
  w.fixed('u', 0); // body length, below
  w.fixed('u', msg.serial);
  // The fields: an array of (code, variant) structs, each 8-aligned.
  w.fixed('u', 0);
  const fieldsStart = w.length;
  HEADER_FIELDS.forEach(([key, code, type], i) => {
    const v = msg[key];
    if (v === undefined || v === '') return;
    w.align(8);
    w.u8(code);
    w.string('g', type);
    w.value(FIELD_TYPES[i]!, v as WireValue);
  });
  w.u32At(12, w.length - fieldsStart);
  w.align(8);
  const bodyStart = w.length;
  if (tree.length > 0) writeBody(w, tree, msg.body);
  w.u32At(4, w.length - bodyStart);
  const out = w.result();
  if (out.length > MAX_MESSAGE_SIZE) throw new TypeError('D-Bus message larger than 128 MiB');
  return out;
}

/**
 * The strings messages repeat (paths, interfaces, members, bus names, signatures, signal
 * names), kept once: a hit compares the bytes with the kept string instead of decoding them
 * (Buffer's UTF-8 decoder is a call into C++ and a new string per field). Direct-mapped by a
 * hash of the bytes, so a peer sending ever new strings only replaces entries: its cost per
 * string stays bounded and memory fixed. Only short ASCII strings are kept; any other string
 * is decoded as before.
 */
class ShortStringCache {
  private static readonly MAX_LENGTH = 64;
  private static readonly SLOT_BITS = 9;
  private readonly kept: (string | undefined)[] = new Array(1 << ShortStringCache.SLOT_BITS).fill(undefined);

  decode(buf: Buffer, at: number, len: number): string {
    if (len > ShortStringCache.MAX_LENGTH) return buf.toString('utf8', at, at + len);
    // Every byte goes into the slot's hash (bus names such as ":1.123" differ in one or two), and
    // a byte outside ASCII sends the string to Buffer's decoder.
    let hash = len;
    for (let i = at; i < at + len; i++) {
      const byte = buf[i]!;
      if (byte > 0x7f) return buf.toString('utf8', at, at + len);
      hash = Math.imul(hash ^ byte, 0x9e3779b1);
    }
    // The product's top bits depend on every input bit (its low bits only on the low ones).
    const slot = hash >>> (32 - ShortStringCache.SLOT_BITS);
    const kept = this.kept[slot];
    if (kept !== undefined && kept.length === len && sameAscii(kept, buf, at)) return kept;
    const text = buf.toString('latin1', at, at + len);
    this.kept[slot] = text;
    return text;
  }
}

/** Whether `text` (ASCII, as long as the bytes) is the bytes at `at`. */
function sameAscii(text: string, buf: Buffer, at: number): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) !== buf[at + i]) return false;
  return true;
}

const shortStrings = new ShortStringCache();

class Reader {
  pos = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly le: boolean,
    /** Offset of `buf` inside the message: alignment is relative to the message start. */
    private readonly base: number,
  ) {}

  align(n: number): void {
    const abs = this.base + this.pos;
    this.pos += (n - (abs % n)) % n;
    if (this.pos > this.buf.length) throw new RangeError('D-Bus message truncated');
  }

  private take(n: number): number {
    const at = this.pos;
    if (at + n > this.buf.length) throw new RangeError('D-Bus message truncated');
    this.pos += n;
    return at;
  }

  fixed(type: string): number | bigint | boolean {
    this.align(alignment(type));
    const b = this.buf;
    const le = this.le;
    switch (type) {
      case 'y':
        return b[this.take(1)]!;
      case 'b':
        return (le ? b.readUInt32LE(this.take(4)) : b.readUInt32BE(this.take(4))) !== 0;
      case 'n':
        return le ? b.readInt16LE(this.take(2)) : b.readInt16BE(this.take(2));
      case 'q':
        return le ? b.readUInt16LE(this.take(2)) : b.readUInt16BE(this.take(2));
      case 'i':
        return le ? b.readInt32LE(this.take(4)) : b.readInt32BE(this.take(4));
      case 'u':
      case 'h':
        return this.u32();
      case 'x': {
        const v = le ? b.readBigInt64LE(this.take(8)) : b.readBigInt64BE(this.take(8));
        return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
      }
      case 't': {
        const v = le ? b.readBigUInt64LE(this.take(8)) : b.readBigUInt64BE(this.take(8));
        return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
      }
      case 'd':
        return le ? b.readDoubleLE(this.take(8)) : b.readDoubleBE(this.take(8));
      default:
        throw new TypeError(`unsupported D-Bus type '${type}'`);
    }
  }

  /** A UINT32 at the current position (aligned by the caller), byte by byte; take() checks bounds. */
  u32(): number {
    const o = this.take(4);
    const b = this.buf;
    return this.le
      ? (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + b[o + 3]! * 0x1000000
      : (b[o + 3]! | (b[o + 2]! << 8) | (b[o + 1]! << 16)) + b[o]! * 0x1000000;
  }

  string(type: string): string {
    let len: number;
    if (type === 'g') len = this.buf[this.take(1)]!;
    else {
      this.align(4);
      len = this.u32();
    }
    const at = this.take(len + 1);
    return shortStrings.decode(this.buf, at, len);
  }

  value(node: SignatureType, depth = 0): WireValue {
    if (depth > 64) throw new RangeError('D-Bus value nested too deeply');
    switch (node.type) {
      case 's':
      case 'o':
      case 'g':
        return this.string(node.type);
      case 'a': {
        const len = this.fixed('u') as number;
        const child = node.children[0]!;
        this.align(alignment(child.type));
        const end = this.pos + len;
        if (end > this.buf.length) throw new RangeError('D-Bus array longer than its message');
        const out: WireValue[] = [];
        while (this.pos < end) out.push(this.value(child, depth + 1));
        return out;
      }
      case '(':
      case '{':
        this.align(8);
        return node.children.map((c) => this.value(c, depth + 1));
      case 'v': {
        const sig = this.string('g');
        return [sig, this.value(parseSingleType(sig), depth + 1)];
      }
      default:
        return this.fixed(node.type);
    }
  }

  /** A variant's value alone (its signature read first, not returned): for header fields. */
  variant(depth: number): WireValue {
    const sig = this.string('g');
    return this.value(parseSingleType(sig), depth + 1);
  }
}

/** Decodes a body; throws on a body that does not match its signature. */
export function decodeBody(buf: Buffer, signature: string, le: boolean, base: number): WireValue[] {
  const r = new Reader(buf, le, base);
  return parseTypes(signature).map((n) => r.value(n));
}

/** Bytes of the fixed part of a message header (endianness … fields array length). */
export const FIXED_HEADER_SIZE = 16;

/** Sizes of the message at the start of `buf` once its fixed header is there, else undefined. */
export function frameSizes(buf: Buffer): { headerSize: number; total: number } | undefined {
  if (buf.length < FIXED_HEADER_SIZE) return undefined;
  const le = buf[0] === 0x6c;
  if (!le && buf[0] !== 0x42) throw new RangeError('bad D-Bus endianness byte');
  const bodyLen = le ? buf.readUInt32LE(4) : buf.readUInt32BE(4);
  const fieldsLen = le ? buf.readUInt32LE(12) : buf.readUInt32BE(12);
  const headerSize = FIXED_HEADER_SIZE + Math.ceil(fieldsLen / 8) * 8;
  const total = headerSize + bodyLen;
  if (total > MAX_MESSAGE_SIZE) throw new RangeError('D-Bus message larger than 128 MiB');
  return { headerSize, total };
}

/** Total size of the message at the start of `buf` once its fixed header is there, else 0. */
export function frameSize(buf: Buffer): number {
  return frameSizes(buf)?.total ?? 0;
}

export interface DecodedMessage extends Message {
  /** Set when the header was readable but the body was not (unsupported type, truncation). */
  bodyError?: string;
}

/** A message whose header is decoded and whose body is not (yet): enough to route or refuse it. */
export interface MessageHeader extends DecodedMessage {
  /** Length of the body in bytes, as the fixed header states it. */
  bodyLength: number;
  /** Offset of the body from the start of the message. */
  bodyStart: number;
  littleEndian: boolean;
}

/**
 * Decodes the header of the message at the start of `buf`, which must hold at least the whole
 * header (frameSizes().headerSize bytes); the body stays undecoded. Header errors throw.
 */
export function decodeHeader(buf: Buffer): MessageHeader {
  const le = buf[0] === 0x6c;
  const head = new Reader(buf, le, 0);
  head.pos = 1;
  const type = head.fixed('y') as number;
  const flags = head.fixed('y') as number;
  head.fixed('y'); // protocol version
  const bodyLength = head.fixed('u') as number;
  const serial = head.fixed('u') as number;
  // Every field present (undefined where absent), in one order: all headers share one shape.
  const msg: MessageHeader = {
    type,
    flags,
    serial,
    path: undefined,
    interface: undefined,
    member: undefined,
    errorName: undefined,
    replySerial: undefined,
    destination: undefined,
    sender: undefined,
    signature: undefined,
    body: [],
    bodyLength,
    bodyStart: 0,
    littleEndian: le,
  };
  // The fields array a(yv), read in place: each (code, variant) struct 8-aligned.
  const fieldsLength = head.fixed('u') as number;
  head.align(8);
  const end = head.pos + fieldsLength;
  if (end > buf.length) throw new RangeError('D-Bus array longer than its message');
  while (head.pos < end) {
    head.align(8);
    const code = head.fixed('y') as number;
    const value = head.variant(1);
    const key = FIELD_BY_CODE[code];
    if (key) (msg as unknown as Record<string, unknown>)[key] = value;
  }
  head.align(8);
  msg.bodyStart = head.pos;
  return msg;
}

/**
 * Decodes the body of a message whose header is `header`; `buf` holds the whole message. A body
 * that does not match its signature is reported in `bodyError`, not thrown.
 */
export function decodeBodyOf(header: MessageHeader, buf: Buffer): DecodedMessage {
  const { bodyLength, bodyStart, littleEndian } = header;
  const msg: DecodedMessage = {
    type: header.type,
    flags: header.flags,
    serial: header.serial,
    path: header.path,
    interface: header.interface,
    member: header.member,
    errorName: header.errorName,
    replySerial: header.replySerial,
    destination: header.destination,
    sender: header.sender,
    signature: header.signature,
    body: header.body,
    bodyError: undefined,
  };
  if (msg.signature && bodyLength > 0) {
    try {
      msg.body = decodeBody(
        buf.subarray(bodyStart, bodyStart + bodyLength),
        msg.signature,
        littleEndian,
        bodyStart,
      );
    } catch (err) {
      msg.bodyError = err instanceof Error ? err.message : String(err);
    }
  }
  return msg;
}

/** Decodes one complete message (as framed by frameSize). Header errors throw. */
export function decodeMessage(buf: Buffer): DecodedMessage {
  return decodeBodyOf(decodeHeader(buf), buf);
}
