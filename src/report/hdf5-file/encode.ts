import { JoulegateError, shortValue } from '../../platform/errors.js';
import { Bytes, UNDEFINED } from './bytes.js';
import { lookup3 } from './lookup3.js';
import { type AttrValue, type DatasetData, isText } from './tree.js';

/*
 * Byte encodings of the HDF5 File Format Specification (version 3) that write-file.ts uses:
 * superblock version 2, version-2 object headers and their messages, global heap collections.
 * Offsets and lengths are 8 bytes; everything is little-endian. Each encoder appends to `out`.
 */

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
const fixedPoint = (out: Bytes, bytes: number, signed: boolean) =>
  out
    .u8(0x10, signed ? 0x08 : 0, 0, 0)
    .u32(bytes)
    .u16(0)
    .u16(bytes * 8);

/** Datatype message (0x0003): IEEE float64 LE, int64/int32 LE, variable-length UTF-8 string. */
export function datatype(out: Bytes, type: ElementType): Bytes {
  switch (type) {
    case 'float64':
      // Class 1, version 1; implied mantissa normalisation, sign at bit 63; exponent at 52
      // (11 bits, bias 1023), mantissa at 0 (52 bits).
      return out.u8(0x11, 0x20, 63, 0).u32(8).u16(0).u16(64).u8(52, 11, 0, 52).u32(1023);
    case 'int64':
      return fixedPoint(out, 8, true);
    case 'int32':
      return fixedPoint(out, 4, true);
    case 'string':
      // Class 9 (variable-length), version 1: a string (type 1), space-padded (2) as h5wasm wrote
      // it, UTF-8 (1), of unsigned bytes.
      return fixedPoint(out.u8(0x19, 0x21, 0x01, 0).u32(VLEN_SIZE), 1, false);
  }
}

/** Dataspace message (0x0001) version 2: scalar, or 1-D of `length` (its maximum too). */
export function dataspace(out: Bytes, length?: number): Bytes {
  if (length === undefined) return out.u8(2, 0, 0, 0);
  return out.u8(2, 1, 1, 1).u64(length).u64(length);
}

/** Fill value message (0x0005) version 3: the default fill, allocated late, written as libhdf5 does. */
export const fillValue = (out: Bytes, type: ElementType) =>
  // Late allocation (2); fill time "if set" (2 << 2), "on allocation" (0) for variable-length types.
  out.u8(3, type === 'string' ? 0x02 : 0x0a);

/** Data layout message (0x0008) version 3: contiguous data at `address` (UNDEFINED when empty). */
export const contiguousLayout = (out: Bytes, address: number, size: number) =>
  out
    .u8(3, 1)
    .u64(size === 0 ? UNDEFINED : address)
    .u64(size);

export const vlenRef = (out: Bytes, ref: HeapRef, collectionAddress: number) =>
  out.u32(ref.length).u64(collectionAddress).u32(ref.index);

/** A string and its UTF-8 size; a non-ASCII name is marked UTF-8 in its message. */
export interface Name {
  text: string;
  bytes: number;
}
export const nameOf = (text: string): Name => ({ text, bytes: Buffer.byteLength(text) });
const isAscii = (name: Name) => name.bytes === name.text.length;

/** Link message (0x0006) version 1: a hard link, with its creation index where order is tracked. */
export function link(out: Bytes, name: Name, address: number, creationIndex?: number): Bytes {
  const lengthBytes = name.bytes < 0x100 ? 1 : name.bytes < 0x10000 ? 2 : 4;
  const flags =
    (lengthBytes === 1 ? 0 : lengthBytes === 2 ? 1 : 2) |
    (creationIndex === undefined ? 0 : 0x04) |
    (isAscii(name) ? 0 : 0x10);
  out.u8(1, flags);
  if (creationIndex !== undefined) out.u64(creationIndex);
  if (!isAscii(name)) out.u8(1); // UTF-8
  if (lengthBytes === 1) out.u8(name.bytes);
  else if (lengthBytes === 2) out.u16(name.bytes);
  else out.u32(name.bytes);
  return out.utf8(name.text, name.bytes).u64(address);
}

/** Link info message (0x0002) version 0: compact storage (no fractal heap, no B-trees). */
export function linkInfo(out: Bytes, tracked: boolean, links: number): Bytes {
  out.u8(0, tracked ? 0x03 : 0);
  if (tracked) out.u64(links); // the next creation index
  out.u64(UNDEFINED).u64(UNDEFINED);
  return tracked ? out.u64(UNDEFINED) : out;
}

/** Group info message (0x000A) version 0: default phase change and estimates. */
export const groupInfo = (out: Bytes) => out.u8(0, 0);

/** Attribute info message (0x0015) version 0: compact storage, next creation index where tracked. */
export function attributeInfo(out: Bytes, tracked: boolean, attributes: number): Bytes {
  out.u8(0, tracked ? 0x03 : 0);
  if (tracked) out.u16(attributes);
  out.u64(UNDEFINED).u64(UNDEFINED);
  return tracked ? out.u64(UNDEFINED) : out;
}

/**
 * Attribute message (0x000C) version 3: a scalar or 1-D value; a string is a reference into the
 * global heap (`strings`: each one's reference and its collection's address).
 */
export function attribute(
  out: Bytes,
  name: Name,
  value: AttrValue,
  strings: readonly HeapRef[],
  addressOf: (collection: number) => number,
): Bytes {
  out.u8(3, 0).u16(name.bytes + 1);
  // The datatype's and dataspace's sizes precede them: written once they are known.
  const sizesAt = out.length;
  out
    .u16(0)
    .u16(0)
    .u8(isAscii(name) ? 0 : 1);
  out.utf8(name.text, name.bytes).u8(0);
  const typeAt = out.length;
  datatype(out, attrType(value));
  const spaceAt = out.length;
  dataspace(out, Array.isArray(value) ? value.length : undefined);
  out.setU16(sizesAt, spaceAt - typeAt);
  out.setU16(sizesAt + 2, out.length - spaceAt);
  if (isText(value)) {
    for (const ref of strings) vlenRef(out, ref, addressOf(ref.collection));
    return out;
  }
  return value.type === 'float64' ? out.f64(value.value) : out.i64(value.value);
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

/** The largest message: its size is a 2-byte field. */
const MAX_MESSAGE = 0xffff;

/**
 * Builds version-2 object headers ("OHDR") in one chunk, its size field as wide as it needs.
 * A message's data is what is appended to the buffer `message()` returns, until the next
 * `message()` or `end()`. With `tracked`, attribute creation order is tracked and indexed, and
 * every message carries a creation index (flags bits 2 and 3). One is reused for every header.
 */
export class ObjectHeader {
  private readonly body = new Bytes(4096);
  private sizeAt = -1;
  private start = 0;
  private tracked = false;
  private path = '';

  begin(tracked: boolean, path: string): void {
    this.body.reset();
    this.sizeAt = -1;
    this.tracked = tracked;
    this.path = path;
  }

  /** Starts a message; libhdf5 marks datatype and fill value messages constant. */
  message(type: number, constant = false, creationIndex = 0): Bytes {
    this.close();
    this.body.u8(type);
    this.sizeAt = this.body.length;
    this.body.u16(0).u8(constant ? 1 : 0);
    if (this.tracked) this.body.u16(creationIndex);
    this.start = this.body.length;
    return this.body;
  }

  private close(): void {
    if (this.sizeAt < 0) return;
    const size = this.body.length - this.start;
    if (size > MAX_MESSAGE)
      throw new JoulegateError(
        `HDF5 object ${shortValue(this.path)}: a message of ${size} bytes is over the ${MAX_MESSAGE} an object header holds`,
      );
    this.body.setU16(this.sizeAt, size);
    this.sizeAt = -1;
  }

  /** Appends the header to `out`: signature, version, flags, chunk size, messages, checksum. */
  end(out: Bytes): void {
    this.close();
    const chunk = this.body.length;
    const sizeBytes = chunk < 0x100 ? 1 : chunk < 0x10000 ? 2 : chunk < 2 ** 32 ? 4 : 8;
    const start = out.length;
    out.u8(0x4f, 0x48, 0x44, 0x52, 2, Math.log2(sizeBytes) | (this.tracked ? 0x0c : 0));
    if (sizeBytes === 1) out.u8(chunk);
    else if (sizeBytes === 2) out.u16(chunk);
    else if (sizeBytes === 4) out.u32(chunk);
    else out.u64(chunk);
    out.bytes(this.body.from());
    out.u32(lookup3(out.from(start)));
  }
}

/** Superblock version 2: 8-byte offsets and lengths, no extension, root group at `root`. */
export const SUPERBLOCK_SIZE = 48;
export function superblock(endOfFile: number, root: number): Uint8Array {
  const out = new Bytes(SUPERBLOCK_SIZE)
    .u8(0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a) // \x89HDF\r\n\x1a\n
    .u8(2, 8, 8, 0) // version, offset size, length size, consistency flags
    .u64(0) // base address
    .u64(UNDEFINED) // superblock extension
    .u64(endOfFile)
    .u64(root);
  return out.u32(lookup3(out.from())).from();
}

/**
 * A global heap collection ("GCOL", version 1) holding `objects` as objects 1, 2, …: each an
 * index, a reference count of 0 (as libhdf5 writes string data), its size and its bytes padded to
 * 8. libhdf5 reads at least 4096 bytes of a collection, so a smaller one ends in free space
 * (object 0, whose size counts its own 16-byte header).
 */
const COLLECTION_HEADER = 16;
const OBJECT_HEADER = 16;
const MIN_COLLECTION = 4096;
const padded = (n: number) => Math.ceil(n / 8) * 8;

export function collectionSize(objects: readonly Name[]): number {
  const used = COLLECTION_HEADER + objects.reduce((sum, o) => sum + OBJECT_HEADER + padded(o.bytes), 0);
  // Free space is an object: 8 bytes left would be too few for its header.
  return used >= MIN_COLLECTION ? used : MIN_COLLECTION - used === 8 ? MIN_COLLECTION + 8 : MIN_COLLECTION;
}

export function collection(objects: readonly Name[]): Uint8Array {
  const size = collectionSize(objects);
  const out = new Bytes(size).u8(0x47, 0x43, 0x4f, 0x4c, 1, 0, 0, 0).u64(size); // "GCOL"
  objects.forEach((o, i) => {
    out
      .u16(i + 1)
      .u16(0)
      .u32(0)
      .u64(o.bytes)
      .utf8(o.text, o.bytes)
      .zeros(padded(o.bytes) - o.bytes);
  });
  const free = size - out.length;
  if (free >= OBJECT_HEADER) out.u16(0).u16(0).u32(0).u64(free);
  return out.zeros(size - out.length).from();
}
