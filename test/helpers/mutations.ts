/*
 * Damaged copies of a real report file, for the export fuzz test and bench/export-fuzz.ts: each
 * seeded, so a case that fails can be made again from its number.
 */

export type MutationKind = 'bit flips' | 'truncation' | 'byte run' | 'huge length';

export interface Mutation {
  kind: MutationKind;
  bytes: Buffer;
}

const KINDS: readonly MutationKind[] = ['bit flips', 'truncation', 'byte run', 'huge length'];

/**
 * One damaged copy of `original`: a few bits flipped, the file cut short, a run of one byte
 * value written over it, or a 2-, 4- or 8-byte field set huge (where HDF5 keeps sizes, counts
 * and addresses; in JSON a run of digits or 0xff bytes).
 */
export function mutate(original: Buffer, random: () => number): Mutation {
  const bytes = Buffer.from(original);
  const at = () => Math.floor(random() * bytes.length);
  const kind = KINDS[Math.floor(random() * KINDS.length)]!;
  switch (kind) {
    case 'bit flips':
      for (let n = 1 + Math.floor(random() * 8); n > 0; n--) {
        const i = at();
        bytes[i] = bytes[i]! ^ (1 << Math.floor(random() * 8));
      }
      return { kind, bytes };
    case 'truncation':
      return { kind, bytes: bytes.subarray(0, at()) };
    case 'byte run': {
      const value = [0, 0xff, 0x7f, 0x39, 0x5b][Math.floor(random() * 5)]!;
      const start = at();
      bytes.fill(value, start, Math.min(bytes.length, start + 1 + Math.floor(random() * 64)));
      return { kind, bytes };
    }
    case 'huge length': {
      const width = [2, 4, 8][Math.floor(random() * 3)]!;
      const start = Math.min(at(), bytes.length - width);
      bytes.fill(0xff, start, start + width);
      // A large but not all-ones value too: libhdf5 treats ~0 as "undefined address".
      if (random() < 0.5) bytes[start + width - 1] = 0x7f;
      return { kind, bytes };
    }
  }
}

/** Text a user should never see from a reader: native aborts, library diagnostics, stacks. */
export const NATIVE_TEXT =
  /Aborted\(|Cannot enlarge memory|RuntimeError|HDF5-DIAG|#\d{3}:|\n\s+at |wasm-function/;
