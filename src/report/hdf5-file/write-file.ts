import { endianness } from 'node:os';
import { writeAll, writeWhole } from '../../platform/whole-file.js';
import { Bytes } from './bytes.js';
import {
  attribute,
  attributeInfo,
  collection,
  collectionSize,
  contiguousLayout,
  dataspace,
  datatype,
  elementSize,
  elementType,
  fillValue,
  groupInfo,
  type HeapRef,
  link,
  linkInfo,
  MESSAGE,
  type Name,
  nameOf,
  ObjectHeader,
  SUPERBLOCK_SIZE,
  superblock,
  VLEN_SIZE,
  vlenRef,
} from './encode.js';
import { H5Dataset, type H5Group, type H5Node, isStrings, isText } from './tree.js';

/*
 * Writes an H5Group tree as an HDF5 file that libhdf5 (h5py, h5wasm) reads and edits: superblock
 * version 2, then every object header (depth first), then the global heap collections holding
 * the strings, then each dataset's contiguous data. Groups keep their links and attributes in
 * the header (compact storage); no B-trees, no fractal heaps, no chunking, no compression.
 */

/** A collection's object index is 2 bytes: 65535 strings at most per collection. */
const MAX_HEAP_INDEX = 0xffff;
/** Headers go to the file in pieces of about this size (a large report's are megabytes). */
const FLUSH_AT = 64 * 1024;

/** The strings of the file, packed into global heap collections in the order they were added. */
class GlobalHeap {
  readonly collections: Name[][] = [];
  addresses: number[] = [];

  add(text: string): HeapRef {
    let last = this.collections.at(-1);
    if (last === undefined || last.length === MAX_HEAP_INDEX) {
      last = [];
      this.collections.push(last);
    }
    const name = nameOf(text);
    last.push(name);
    return { length: name.bytes, collection: this.collections.length - 1, index: last.length };
  }
  readonly addressOf = (collection: number) => this.addresses[collection]!;
}

/** Groups that track creation order (h5py's track_order); datasets list attributes by name. */
const tracksOrder = (node: H5Node) => !(node instanceof H5Dataset) && node.trackOrder;

/** One object of the file: where its header and data go, and where its strings are. */
interface Placed {
  node: H5Node;
  header: number;
  /** Heap references of its string attributes' values, by name. */
  strings: Map<string, HeapRef[]>;
  /** A string dataset's elements. */
  elements?: HeapRef[];
  data: number;
  dataSize: number;
}

function place(root: H5Group, heap: GlobalHeap): Placed[] {
  const placed: Placed[] = [];
  const visit = (node: H5Node) => {
    const strings = new Map<string, HeapRef[]>();
    for (const [name, value] of node.attributes)
      if (isText(value))
        strings.set(
          name,
          (typeof value === 'string' ? [value] : value).map((s) => heap.add(s)),
        );
    const p: Placed = { node, header: 0, strings, data: 0, dataSize: 0 };
    placed.push(p);
    if (node instanceof H5Dataset) {
      p.dataSize = node.data.length * elementSize[elementType(node.data)];
      if (isStrings(node.data)) p.elements = node.data.map((s) => heap.add(s));
    } else {
      for (const member of node.members.values()) visit(member);
    }
  };
  visit(root);
  return placed;
}

const NO_STRINGS: HeapRef[] = [];

/** One object's header messages, given where every object and heap collection is. */
function writeMessages(
  h: ObjectHeader,
  p: Placed,
  addressOf: (node: H5Node) => number,
  heap: GlobalHeap,
): void {
  const { node } = p;
  const tracked = tracksOrder(node);
  if (node instanceof H5Dataset) {
    const type = elementType(node.data);
    dataspace(h.message(MESSAGE.dataspace), node.data.length);
    datatype(h.message(MESSAGE.datatype, true), type);
    fillValue(h.message(MESSAGE.fillValue, true), type);
    contiguousLayout(h.message(MESSAGE.layout), p.data, p.dataSize);
  } else {
    linkInfo(h.message(MESSAGE.linkInfo), tracked, node.members.size);
    groupInfo(h.message(MESSAGE.groupInfo));
    let index = 0;
    for (const [name, member] of node.members)
      link(h.message(MESSAGE.link), nameOf(name), addressOf(member), tracked ? index++ : undefined);
  }
  attributeInfo(h.message(MESSAGE.attributeInfo), tracked, node.attributes.size);
  let index = 0;
  for (const [name, value] of node.attributes) {
    const strings = p.strings.get(name) ?? NO_STRINGS;
    attribute(h.message(MESSAGE.attribute, false, index++), nameOf(name), value, strings, heap.addressOf);
  }
}

const LITTLE_ENDIAN_HOST = endianness() === 'LE';

/** A numeric dataset's bytes, little-endian. */
function littleEndian(data: Float64Array | BigInt64Array | Int32Array): Uint8Array {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (LITTLE_ENDIAN_HOST) return bytes;
  const copy = Buffer.from(bytes);
  return data.BYTES_PER_ELEMENT === 8 ? copy.swap64() : copy.swap32();
}

function dataBytes(data: H5Dataset['data'], elements: readonly HeapRef[], heap: GlobalHeap): Uint8Array {
  if (!isStrings(data)) return littleEndian(data);
  const out = new Bytes(elements.length * VLEN_SIZE);
  for (const ref of elements) vlenRef(out, ref, heap.addressOf(ref.collection));
  return out.from();
}

/** Writes the tree under `root` to `path`, replacing it only once the file is complete. */
export function writeHdf5File(root: H5Group, path: string): void {
  writeWhole({ path }, (fd) => writeHdf5To(fd, root));
}

/** Writes the tree under `root` to the file open as `fd`, from its start. */
export function writeHdf5To(fd: number, root: H5Group): void {
  const heap = new GlobalHeap();
  const placed = place(root, heap);
  const byNode = new Map(placed.map((p) => [p.node, p]));
  const addressOf = (node: H5Node) => byNode.get(node)!.header;
  const header = new ObjectHeader();
  const headers = new Bytes(FLUSH_AT * 2);
  const writeHeader = (p: Placed) => {
    header.begin(tracksOrder(p.node), p.node.path);
    writeMessages(header, p, addressOf, heap);
    header.end(headers);
  };
  // Headers hold addresses of fixed size: their sizes are known before the addresses are.
  let end = SUPERBLOCK_SIZE;
  heap.addresses = heap.collections.map(() => 0);
  for (const p of placed) {
    p.header = end;
    headers.reset();
    writeHeader(p);
    end += headers.length;
  }
  heap.addresses = heap.collections.map((objects) => {
    const at = end;
    end += collectionSize(objects);
    return at;
  });
  for (const p of placed) {
    p.data = end;
    end += p.dataSize;
  }
  writeAll(fd, superblock(end, placed[0]!.header));
  headers.reset();
  for (const p of placed) {
    writeHeader(p);
    if (headers.length >= FLUSH_AT) {
      writeAll(fd, headers.from());
      headers.reset();
    }
  }
  writeAll(fd, headers.from());
  for (const objects of heap.collections) writeAll(fd, collection(objects));
  for (const { node, elements = [], dataSize } of placed)
    if (node instanceof H5Dataset && dataSize > 0) writeAll(fd, dataBytes(node.data, elements, heap));
}
