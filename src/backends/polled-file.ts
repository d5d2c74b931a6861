import { closeSync, openSync, readSync } from 'node:fs';
import { wrapIoError } from '../platform/sysroot.js';

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

  /** Whole content as text; I/O errors name the file (permission → PermissionError). */
  read(): string {
    try {
      if (this.fd === undefined) this.fd = openSync(this.path, 'r');
      for (;;) {
        const n = this.readAll(this.fd);
        if (n < this.buffer.length) return this.buffer.toString('latin1', 0, n);
        // Filled the buffer: the file may be longer (big /proc/stat); grow and read again.
        this.buffer = Buffer.allocUnsafe(this.buffer.length * 2);
      }
    } catch (err) {
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
    return readSync(fd, this.buffer, 0, this.buffer.length, 0);
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
