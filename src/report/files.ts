import { randomBytes } from 'node:crypto';
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, JoulegateError } from '../platform/errors.js';
import { ioReason, makeDirs } from '../platform/make-dirs.js';

function makeOutputDir(dir: string): void {
  try {
    makeDirs(dir);
  } catch (err) {
    throw new JoulegateError(`cannot use output directory ${dir}: ${errorMessage(err)}`);
  }
}

/**
 * Creates `<dir>/<stem>.<ext>`, or `<stem>_1.<ext>`, `_2`, … if taken: O_EXCL makes the choice
 * atomic, so monitors running at the same time never overwrite each other's files.
 */
export function createUnique(dir: string, stem: string, ext: string): { fd: number; path: string } {
  makeOutputDir(dir);
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
export function writeUnique(
  dir: string,
  stem: string,
  ext: string,
  content: string | Uint8Array | Iterable<string>,
): string {
  const { fd, path } = createUnique(dir, stem, ext);
  try {
    if (typeof content === 'string' || content instanceof Uint8Array) writeAll(fd, content);
    else for (const chunk of content) writeAll(fd, chunk);
  } finally {
    closeSync(fd);
  }
  return path;
}

/** UTF-16 units of a string encoded at a time, into one scratch buffer reused for every write. */
const SLICE = 1 << 18;
/** Room for SLICE units in UTF-8: at most 3 bytes per unit (a surrogate pair is 4 bytes for 2). */
let scratch: Buffer | undefined;

/** writeSync may write less than it is given (a full disk, a signal): the rest follows. */
function writeAll(fd: number, content: string | Uint8Array): void {
  if (typeof content !== 'string') {
    for (let done = 0; done < content.length; ) done += writeSync(fd, content, done, content.length - done);
    return;
  }
  scratch ??= Buffer.allocUnsafe(3 * SLICE);
  for (let start = 0; start < content.length; ) {
    let end = Math.min(start + SLICE, content.length);
    // Never split a surrogate pair: half of one would be written as U+FFFD.
    const last = content.charCodeAt(end - 1);
    if (end < content.length && last >= 0xd800 && last <= 0xdbff) end--;
    const bytes = scratch.write(content.slice(start, end));
    writeAll(fd, scratch.subarray(0, bytes));
    start = end;
  }
}

/**
 * Makes sure reports can be written to `dir` before anything is measured: creates it and
 * creates and removes a file in it. Throws one line naming the directory and the reason.
 */
export function checkOutputDir(dir: string): void {
  makeOutputDir(dir);
  const probe = join(dir, `.joulegate-write-test-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    closeSync(openSync(probe, 'wx', 0o600));
    unlinkSync(probe);
  } catch (err) {
    throw new JoulegateError(`cannot write to output directory ${dir} (${ioReason(err)})`);
  }
}
