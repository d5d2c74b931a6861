import { JoulegateError } from '../../platform/errors.js';
import { lookup3 } from './lookup3.js';
import { type AttrValue, type DatasetData, isText } from './tree.js';

/*
 * Byte encodings of the HDF5 File Format Specification (version 3) that write-file.ts uses:
 * superblock version 2, version-2 object headers and their messages, global heap collections.
 * Offsets and lengths are 8 bytes; everything is little-endian.
 */

/** An unallocated address ("undefined address": all bits set). */
export const UNDEFINED = -1;

/** A growing buffer of little-endian fields. */
export class Bytes {
  private buf = new Uint8Array(64);
  private view = new DataView(this.buf.buffer);
  length = 0;

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
    for (const v of values) {
      const at = this.room(1);
      this.buf[at] = v;
    }
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
  /** An 8-byte offset or length; UNDEFINED is all ones. */
  u64(v: number): this {
    const at = this.room(8);
    this.view.setBigUint64(at, v === UNDEFINED ? 2n ** 64n - 1n : BigInt(v), true);
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
  done(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

export type ElementType = 'float64' | 'int64' | 'int32' | 'string';

/** Where a variable-length string lies: its global heap collection and index in it. */
export interface HeapRef {
  length: number;
  collection: number;
  index: number;
}

/** A variable-length element as stored in a dataset or attribute: length, collection, index. */
export const VLEN_SIZE = 16;
export const elementSize: Record<ElementType, number> = { float64: 8, int64: 8, int32: 4, string: VLEN_SIZE };

export function elementType(data: DatasetData): ElementType {
  if (data instanceof Float64Array) return 'float64';
  if (data instanceof BigInt64Array) return 'int64';
  if (data instanceof Int32Array) return 'int32';
  return 'string';
}

export const attrType = (value: AttrValue): ElementType => (isText(value) ? 'string' : value.type);

/** A fixed-point type (class 0, version 1): little-endian, `bytes` wide. */
const fixedPoint = (bytes: number, signed: boolean) =>
  new Bytes()
    .u8(0x10, signed ? 0x08 : 0, 0, 0)
    .u32(bytes)
    .u16(0)
    .u16(bytes * 8)
    .done();

/** Datatype messages (0x0003): IEEE float64 LE, int64/int32 LE, variable-length UTF-8 string. */
export function datatype(type: ElementType): Uint8Array {
  switch (type) {
    case 'float64':
      // Class 1, version 1; implied mantissa normalisation, sign at bit 63; exponent at 52
      // (11 bits, bias 1023), mantissa at 0 (52 bits).
      return new Bytes().u8(0x11, 0x20, 63, 0).u32(8).u16(0).u16(64).u8(52, 11, 0, 52).u32(1023).done();
    case 'int64':
      return fixedPoint(8, true);
    case 'int32':
      return fixedPoint(4, true);
    case 'string':
      // Class 9 (variable-length), version 1: a string (type 1), space-padded (2) as h5wasm wrote
      // it, UTF-8 (1), of unsigned bytes.
      return new Bytes().u8(0x19, 0x21, 0x01, 0).u32(VLEN_SIZE).bytes(fixedPoint(1, false)).done();
  }
}

/** Dataspace message (0x0001) version 2: scalar, or 1-D of `length` (its maximum too). */
export function dataspace(length?: number): Uint8Array {
  if (length === undefined) return new Bytes().u8(2, 0, 0, 0).done();
  return new Bytes().u8(2, 1, 1, 1).u64(length).u64(length).done();
}

/** Fill value message (0x0005) version 3: the default fill, allocated late, written as libhdf5 does. */
export const fillValue = (type: ElementType) =>
  // Late allocation (2); fill time "if set" (2 << 2), "on allocation" (0) for variable-length types.
  new Bytes().u8(3, type === 'string' ? 0x02 : 0x0a).done();

/** Data layout message (0x0008) version 3: contiguous data at `address` (UNDEFINED when empty). */
export const contiguousLayout = (address: number, size: number) =>
  new Bytes()
    .u8(3, 1)
    .u64(size === 0 ? UNDEFINED : address)
    .u64(size)
    .done();

export function vlenRef(out: Bytes, ref: HeapRef, collectionAddress: number): Bytes {
  return out.u32(ref.length).u64(collectionAddress).u32(ref.index);
}

const ascii = (bytes: Uint8Array) => bytes.every((b) => b < 0x80);

/** Link message (0x0006) version 1: a hard link, with its creation index where order is tracked. */
export function link(name: Uint8Array, address: number, creationIndex?: number): Uint8Array {
  const lengthBytes = name.length < 0x100 ? 1 : name.length < 0x10000 ? 2 : 4;
  const flags =
    (lengthBytes === 1 ? 0 : lengthBytes === 2 ? 1 : 2) |
    (creationIndex === undefined ? 0 : 0x04) |
    (ascii(name) ? 0 : 0x10);
  const out = new Bytes().u8(1, flags);
  if (creationIndex !== undefined) out.u64(creationIndex);
  if (!ascii(name)) out.u8(1); // UTF-8
  if (lengthBytes === 1) out.u8(name.length);
  else if (lengthBytes === 2) out.u16(name.length);
  else out.u32(name.length);
  return out.bytes(name).u64(address).done();
}

/** Link info message (0x0002) version 0: compact storage (no fractal heap, no B-trees). */
export function linkInfo(tracked: boolean, links: number): Uint8Array {
  const out = new Bytes().u8(0, tracked ? 0x03 : 0);
  if (tracked) out.u64(links); // the next creation index
  out.u64(UNDEFINED).u64(UNDEFINED);
  if (tracked) out.u64(UNDEFINED);
  return out.done();
}

/** Group info message (0x000A) version 0: default phase change and estimates. */
export const groupInfo = () => new Bytes().u8(0, 0).done();

/** Attribute info message (0x0015) version 0: compact storage, next creation index where tracked. */
export function attributeInfo(tracked: boolean, attributes: number): Uint8Array {
  const out = new Bytes().u8(0, tracked ? 0x03 : 0);
  if (tracked) out.u16(attributes);
  out.u64(UNDEFINED).u64(UNDEFINED);
  if (tracked) out.u64(UNDEFINED);
  return out.done();
}

/**
 * Attribute message (0x000C) version 3: a scalar or 1-D value; a string is a reference into the
 * global heap (`strings`: each one's reference and its collection's address).
 */
export function attribute(
  name: Uint8Array,
  value: AttrValue,
  strings: readonly [HeapRef, number][],
): Uint8Array {
  const type = datatype(attrType(value));
  const space = dataspace(Array.isArray(value) ? value.length : undefined);
  const out = new Bytes()
    .u8(3, 0)
    .u16(name.length + 1)
    .u16(type.length)
    .u16(space.length)
    .u8(ascii(name) ? 0 : 1)
    .bytes(name)
    .u8(0)
    .bytes(type)
    .bytes(space);
  if (isText(value)) {
    for (const [ref, address] of strings) vlenRef(out, ref, address);
    return out.done();
  }
  return (value.type === 'float64' ? out.f64(value.value) : out.i64(value.value)).done();
}

export const MESSAGE = {
  dataspace: 0x01,
  linkInfo: 0x02,
  datatype: 0x03,
  fillValue: 0x05,
  link: 0x06,
  layout: 0x08,
  groupInfo: 0x0a,
  attribute: 0x0c,
  attributeInfo: 0x15,
} as const;

export interface Message {
  type: number;
  data: Uint8Array;
  /** libhdf5 marks datatype and fill value messages constant (flag bit 0). */
  constant?: boolean;
  /** The creation index of an attribute, where the header tracks attribute order. */
  creationIndex?: number;
}

/** The largest message: its size is a 2-byte field. */
const MAX_MESSAGE = 0xffff;

/**
 * A version-2 object header ("OHDR") in one chunk, its size field as wide as it needs. With
 * `trackAttributes`, attribute creation order is tracked and indexed and every message carries
 * a creation index (flags bits 2 and 3).
 */
export function objectHeader(
  messages: readonly Message[],
  trackAttributes: boolean,
  path: string,
): Uint8Array {
  const prefix = trackAttributes ? 6 : 4;
  let chunk = 0;
  for (const m of messages) {
    if (m.data.length > MAX_MESSAGE)
      throw new JoulegateError(
        `HDF5 object ${path}: a message of ${m.data.length} bytes is over the ${MAX_MESSAGE} an object header holds`,
      );
    chunk += prefix + m.data.length;
  }
  const sizeBytes = chunk < 0x100 ? 1 : chunk < 0x10000 ? 2 : chunk < 2 ** 32 ? 4 : 8;
  const flags = Math.log2(sizeBytes) | (trackAttributes ? 0x0c : 0);
  const out = new Bytes().u8(0x4f, 0x48, 0x44, 0x52, 2, flags); // "OHDR", version 2
  if (sizeBytes === 1) out.u8(chunk);
  else if (sizeBytes === 2) out.u16(chunk);
  else if (sizeBytes === 4) out.u32(chunk);
  else out.u64(chunk);
  for (const m of messages) {
    out
      .u8(m.type)
      .u16(m.data.length)
      .u8(m.constant ? 1 : 0);
    if (trackAttributes) out.u16(m.creationIndex ?? 0);
    out.bytes(m.data);
  }
  return withChecksum(out);
}

function withChecksum(out: Bytes): Uint8Array {
  return out.u32(lookup3(out.done())).done();
}

/** Superblock version 2: 8-byte offsets and lengths, no extension, root group at `root`. */
export const SUPERBLOCK_SIZE = 48;
export function superblock(endOfFile: number, root: number): Uint8Array {
  const out = new Bytes()
    .u8(0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a) // \x89HDF\r\n\x1a\n
    .u8(2, 8, 8, 0) // version, offset size, length size, consistency flags
    .u64(0) // base address
    .u64(UNDEFINED) // superblock extension
    .u64(endOfFile)
    .u64(root);
  return withChecksum(out);
}

/**
 * A global heap collection ("GCOL", version 1) holding `objects` as objects 1, 2, …: each an
 * index, a reference count of 0 (as libhdf5 writes string data), its size and its bytes padded to
 * 8. libhdf5 reads at least 4096 bytes of a collection, so a smaller one ends in free space
 * (object 0, whose size counts its own 16-byte header).
 */
export const COLLECTION_HEADER = 16;
export const OBJECT_HEADER = 16;
export const MIN_COLLECTION = 4096;
export const padded = (n: number) => Math.ceil(n / 8) * 8;

export function collectionSize(objects: readonly Uint8Array[]): number {
  const used = COLLECTION_HEADER + objects.reduce((sum, o) => sum + OBJECT_HEADER + padded(o.length), 0);
  // Free space is an object: 8 bytes left would be too few for its header.
  return used >= MIN_COLLECTION ? used : MIN_COLLECTION - used === 8 ? MIN_COLLECTION + 8 : MIN_COLLECTION;
}

export function collection(objects: readonly Uint8Array[]): Uint8Array {
  const size = collectionSize(objects);
  const out = new Bytes().u8(0x47, 0x43, 0x4f, 0x4c, 1, 0, 0, 0).u64(size); // "GCOL"
  objects.forEach((o, i) => {
    out
      .u16(i + 1)
      .u16(0)
      .u32(0)
      .u64(o.length)
      .bytes(o);
    out.bytes(new Uint8Array(padded(o.length) - o.length));
  });
  const free = size - out.length;
  if (free >= OBJECT_HEADER) out.u16(0).u16(0).u32(0).u64(free);
  out.bytes(new Uint8Array(size - out.length));
  return out.done();
}
