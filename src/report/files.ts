import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, JoulegateError } from '../platform/errors.js';

/**
 * Creates `<dir>/<stem>.<ext>`, or `<stem>_1.<ext>`, `_2`, … if taken: O_EXCL makes the choice
 * atomic, so monitors running at the same time never overwrite each other's files.
 */
export function createUnique(dir: string, stem: string, ext: string): { fd: number; path: string } {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new JoulegateError(`cannot create output directory ${dir}: ${errorMessage(err)}`);
  }
  for (let n = 0; n < 10_000; n++) {
    const path = join(dir, `${stem}${n === 0 ? '' : `_${n}`}.${ext}`);
    try {
      return { fd: openSync(path, 'wx', 0o644), path };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new JoulegateError(`cannot create ${path}: ${errorMessage(err)}`);
      }
    }
  }
  throw new JoulegateError(`no free file name for ${stem}.${ext} in ${dir}`);
}

/** Writes text to a new unique file and returns its path. */
export function writeUnique(dir: string, stem: string, ext: string, content: string | Uint8Array): string {
  const { fd, path } = createUnique(dir, stem, ext);
  try {
    if (typeof content === 'string') writeSync(fd, content);
    else writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  return path;
}
