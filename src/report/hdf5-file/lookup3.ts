/*
 * Bob Jenkins' lookup3 hash (hashlittle, initial value 0): the checksum of every HDF5 metadata
 * block in superblock version 2 files (HDF5 File Format Specification, "Checksum").
 */

const rot = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;

/** The lookup3 checksum of `bytes`; libhdf5 rejects a block whose stored checksum differs. */
export function lookup3(bytes: Uint8Array): number {
  let length = bytes.length;
  let a = (0xdeadbeef + length) >>> 0;
  let b = a;
  let c = a;
  const word = (i: number) =>
    (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)) >>> 0;
  let k = 0;
  while (length > 12) {
    a = (a + word(k)) >>> 0;
    b = (b + word(k + 4)) >>> 0;
    c = (c + word(k + 8)) >>> 0;
    // mix(a, b, c)
    a = ((a - c) >>> 0) ^ rot(c, 4);
    c = (c + b) >>> 0;
    b = ((b - a) >>> 0) ^ rot(a, 6);
    a = (a + c) >>> 0;
    c = ((c - b) >>> 0) ^ rot(b, 8);
    b = (b + a) >>> 0;
    a = ((a - c) >>> 0) ^ rot(c, 16);
    c = (c + b) >>> 0;
    b = ((b - a) >>> 0) ^ rot(a, 19);
    a = (a + c) >>> 0;
    c = ((c - b) >>> 0) ^ rot(b, 4);
    b = (b + a) >>> 0;
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    length -= 12;
    k += 12;
  }
  if (length === 0) return c;
  // The last 1..12 bytes, zero-padded, as three little-endian words.
  const tail = [0, 0, 0];
  for (let i = 0; i < length; i++) tail[i >> 2]! += bytes[k + i]! * 2 ** (8 * (i & 3));
  a = (a + tail[0]!) >>> 0;
  b = (b + tail[1]!) >>> 0;
  c = (c + tail[2]!) >>> 0;
  // final(a, b, c)
  c = ((c ^ b) - rot(b, 14)) >>> 0;
  a = ((a ^ c) - rot(c, 11)) >>> 0;
  b = ((b ^ a) - rot(a, 25)) >>> 0;
  c = ((c ^ b) - rot(b, 16)) >>> 0;
  a = ((a ^ c) - rot(c, 4)) >>> 0;
  b = ((b ^ a) - rot(a, 14)) >>> 0;
  c = ((c ^ b) - rot(b, 24)) >>> 0;
  return c;
}
