import { closeSync, openSync, readSync } from 'node:fs';
import { errnoValue, lastErrno, libc, SystemCallError } from '../platform/libc.js';
import { wrapIoError } from '../platform/sysroot.js';

/** One pread of up to `buffer.length` bytes at offset 0; the byte count. Throws with an errno code. */
type Pread = (fd: number, buffer: Buffer) => number;

let pread: Pread = (fd, buffer) => readSync(fd, buffer, 0, buffer.length, 0);

/**
 * Makes every PolledFile of this process pread through libc (koffi) rather than Node's fs,
 * whose per-call request setup costs about 0.5 µs more. For the batch server, which loads libc
 * anyway and reads the same files a thousand times a second; other processes keep fs and load
 * no native module for it.
 */
export function preadThroughLibc(): void {
  const call = libc().pread;
  const eintr = errnoValue('EINTR');
  pread = (fd, buffer) => {
    for (;;) {
      const n = call(fd, buffer, buffer.length, 0);
      if (n >= 0) return n;
      const errno = lastErrno();
      if (errno !== eintr) throw new SystemCallError('pread', `fd ${fd}`, errno);
    }
  };
}

/**
 * A kernel file read again and again (sysfs attribute, /proc/stat). The descriptor stays open
 * and every read is one pread at offset 0: sysfs and procfs regenerate the content on each read
 * from the start, so this sees fresh values at a third of the cost of open/read/close.
 */
export class PolledFile {
  private fd: number | undefined;
  private buffer: Buffer;

  /**
   * @param path real path of the file (already under the sysroot)
   * @param label the path users know (e.g. /proc/stat), used in error messages
   */
  constructor(
    readonly path: string,
    readonly label: string,
    initialSize = 4096,
  ) {
    this.buffer = Buffer.allocUnsafe(initialSize);
  }

  /** Length of the content the last read left in `buffer`. */
  private length = 0;

  /** Whole content as text; I/O errors name the file (permission → PermissionError). */
  read(): string {
    this.load();
    return this.lastText();
  }

  /**
   * Reads the file and parses it as one decimal integer (surrounding white space allowed)
   * straight from the bytes, without making a string: what a sampling loop reads thousands of
   * times a second. NaN when the content is anything else (a word, a fraction, more than 15
   * digits); lastText() then has it for a full parse or an error message.
   */
  readDecimal(): number {
    this.load();
    const b = this.buffer;
    const end = this.length;
    let i = 0;
    while (i < end && isSpace(b[i]!)) i++;
    const negative = i < end && b[i] === MINUS;
    if (negative) i++;
    const first = i;
    let value = 0;
    for (; i < end; i++) {
      const digit = b[i]! - ZERO;
      if (digit < 0 || digit > 9) break;
      value = value * 10 + digit;
    }
    const digits = i - first;
    while (i < end && isSpace(b[i]!)) i++;
    // 15 digits stay exact in a double; longer numbers go through the text.
    if (digits === 0 || digits > 15 || i !== end) return Number.NaN;
    return negative ? -value : value;
  }

  /** The content the last read() or readDecimal() saw, as text. */
  lastText(): string {
    return this.buffer.toString('latin1', 0, this.length);
  }

  private load(): void {
    try {
      if (this.fd === undefined) this.fd = openSync(this.path, 'r');
      for (;;) {
        this.length = this.readAll(this.fd);
        if (this.length < this.buffer.length) return;
        // Filled the buffer: the file may be longer (big /proc/stat); grow and read again.
        this.buffer = Buffer.allocUnsafe(this.buffer.length * 2);
      }
    } catch (err) {
      this.length = 0;
      this.close();
      throw wrapIoError(err, this.label);
    }
  }

  /**
   * One pread from offset 0. A read that does not fill the buffer has reached the end: procfs
   * seq_files fill the caller's buffer until it is full or the records end, and sysfs attributes
   * are a single page. A full buffer is read again, bigger, by the caller.
   */
  private readAll(fd: number): number {
    return pread(fd, this.buffer);
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // already closed or never valid: nothing left to release
    }
    this.fd = undefined;
  }
}

const ZERO = 0x30;
const MINUS = 0x2d;

/** Space, tab, newline, vertical tab, form feed, carriage return: what String.trim() removes in ASCII. */
function isSpace(byte: number): boolean {
  return byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);
}

/** Either a parsed value or the reason it could not be had (kept per file, per batch). */
export type Outcome<T> = T | Error;

export function attempt<T>(fn: () => T): Outcome<T> {
  try {
    return fn();
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** Unwraps an outcome: a failed read throws its error (a batch turns it into NaN). */
export function unwrap<T>(outcome: Outcome<T> | undefined, what: string): T {
  if (outcome === undefined) throw new Error(`${what} was not read in this batch`);
  if (outcome instanceof Error) throw outcome;
  return outcome;
}
