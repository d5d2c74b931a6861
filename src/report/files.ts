import { randomBytes } from 'node:crypto';
import { closeSync, openSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, JoulegateError, shortValue } from '../platform/errors.js';
import { ioReason, makeDirs } from '../platform/make-dirs.js';
import { writeAll, writeWhole } from '../platform/whole-file.js';

export function makeOutputDir(dir: string): void {
  try {
    makeDirs(dir);
  } catch (err) {
    throw new JoulegateError(`cannot use output directory ${shortValue(dir)}: ${errorMessage(err)}`);
  }
}

/**
 * Writes text or bytes to `<dir>/<stem>.<ext>`, or `<stem>_1.<ext>`, `_2`, … if taken, and
 * returns its path. The file appears whole (platform/whole-file.ts): a renderer that fails
 * part-way (content is rendered as it is written) leaves nothing, and monitors running at the
 * same time never overwrite each other's files.
 */
export function writeUnique(
  dir: string,
  stem: string,
  ext: string,
  content: string | Uint8Array | Iterable<string> | ((fd: number) => void),
): string {
  makeOutputDir(dir);
  return writeWhole({ dir, stem, ext }, (fd) => {
    if (typeof content === 'function') content(fd);
    else if (content instanceof Uint8Array) writeAll(fd, content);
    else {
      const out = new BufferedText(fd);
      if (typeof content === 'string') out.write(content);
      else for (const chunk of content) out.write(chunk);
      out.flush();
    }
  });
}

/** UTF-16 units of a string encoded at a time. */
const SLICE = 1 << 18;
/**
 * One scratch buffer, reused for every file: room for SLICE units in UTF-8, at most 3 bytes per
 * unit (a surrogate pair is 4 bytes for 2).
 */
let scratch: Buffer | undefined;
const scratchBuffer = (): Buffer => {
  scratch ??= Buffer.allocUnsafe(3 * SLICE);
  return scratch;
};

/**
 * Text encoded into the scratch buffer and written when it fills. Renderers hand over many small
 * chunks (a few rows each), which die young in V8's heap; chunks held until a large one was
 * complete lived long enough to be promoted, and the old generation grew by tens of MB before
 * it was collected (a 30,000-sample CSV: +25 MB).
 */
class BufferedText {
  private readonly buffer = scratchBuffer();
  private used = 0;

  constructor(private readonly fd: number) {}

  write(text: string): void {
    for (let start = 0; start < text.length; ) {
      let end = Math.min(start + SLICE, text.length);
      // Never split a surrogate pair: half of one would be written as U+FFFD.
      const last = text.charCodeAt(end - 1);
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
      if (3 * (end - start) > this.buffer.length - this.used) this.flush();
      this.used += this.buffer.write(
        start === 0 && end === text.length ? text : text.slice(start, end),
        this.used,
      );
      start = end;
    }
  }

  flush(): void {
    writeAll(this.fd, this.buffer.subarray(0, this.used));
    this.used = 0;
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
    throw new JoulegateError(`cannot write to output directory ${shortValue(dir)} (${ioReason(err)})`);
  }
}
