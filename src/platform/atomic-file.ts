import { randomUUID } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes `contents` to `path` atomically with exactly `mode`: a temporary file in the same
 * directory (never through a symlink) is written, flushed and renamed over the target, so a
 * reader, or the next start after a crash, sees either the old or the new contents, never a part.
 */
export function writeFileAtomic(
  path: string,
  contents: string | Uint8Array,
  mode: number,
  /** false: no fsync (the page cache outlives a crash of the process, not of the kernel). */
  durable = true,
): void {
  const temp = join(dirname(path), `${basename(path)}-tmp-${randomUUID()}`);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const fd = openSync(temp, flags, mode);
  try {
    fchmodSync(fd, mode);
    const data = typeof contents === 'string' ? Buffer.from(contents) : contents;
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    if (durable) fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, path);
  } catch (err) {
    try {
      closeSync(fd);
    } catch {
      // already closed after a failed rename
    }
    try {
      unlinkSync(temp);
    } catch {
      // the original error is the one worth reporting
    }
    throw err;
  }
}
