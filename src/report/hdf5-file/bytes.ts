/** An unallocated address ("undefined address": all bits set). */
export const UNDEFINED = -1;

const TWO_32 = 2 ** 32;

/**
 * A growing buffer of little-endian fields. One is reused for many small encodings: allocating
 * an ArrayBuffer per message cost most of the writing time of a large report.
 */
export class Bytes {
  private buf: Uint8Array;
  private view: DataView;
  length = 0;
  private static readonly text = new TextEncoder();

  constructor(capacity = 256) {
    this.buf = new Uint8Array(capacity);
    this.view = new DataView(this.buf.buffer);
  }

  /** Makes room for n more bytes; returns where they start (read this.buf/view only after). */
  private room(n: number): number {
    if (this.length + n > this.buf.length) {
      const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
      bigger.set(this.buf.subarray(0, this.length));
      this.buf = bigger;
      this.view = new DataView(bigger.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  u8(...values: number[]): this {
    const at = this.room(values.length);
    for (let i = 0; i < values.length; i++) this.buf[at + i] = values[i]!;
    return this;
  }
  u16(v: number): this {
    const at = this.room(2);
    this.view.setUint16(at, v, true);
    return this;
  }
  u32(v: number): this {
    const at = this.room(4);
    this.view.setUint32(at, v, true);
    return this;
  }
  /** An 8-byte offset or length (a safe integer); UNDEFINED is all ones. */
  u64(v: number): this {
    const at = this.room(8);
    const undefinedAddress = v === UNDEFINED;
    this.view.setUint32(at, undefinedAddress ? TWO_32 - 1 : v % TWO_32, true);
    this.view.setUint32(at + 4, undefinedAddress ? TWO_32 - 1 : Math.floor(v / TWO_32), true);
    return this;
  }
  i64(v: bigint): this {
    const at = this.room(8);
    this.view.setBigInt64(at, v, true);
    return this;
  }
  f64(v: number): this {
    const at = this.room(8);
    this.view.setFloat64(at, v, true);
    return this;
  }
  bytes(b: Uint8Array): this {
    const at = this.room(b.length);
    this.buf.set(b, at);
    return this;
  }
  /** `text` as UTF-8 of `byteLength` bytes (Buffer.byteLength). */
  utf8(text: string, byteLength: number): this {
    const at = this.room(byteLength);
    // ASCII (most names) byte by byte: encodeInto's call costs more than a short name's copy.
    if (byteLength === text.length)
      for (let i = 0; i < byteLength; i++) this.buf[at + i] = text.charCodeAt(i);
    else Bytes.text.encodeInto(text, this.buf.subarray(at, at + byteLength));
    return this;
  }
  zeros(n: number): this {
    const at = this.room(n);
    this.buf.fill(0, at, at + n);
    return this;
  }
  /** Overwrites the 2 bytes at `at` (a size known only after what follows it is written). */
  setU16(at: number, v: number): void {
    this.view.setUint16(at, v, true);
  }
  /** The bytes from `start` on; valid until the next write. */
  from(start = 0): Uint8Array {
    return this.buf.subarray(start, this.length);
  }
  reset(): void {
    this.length = 0;
  }
}
