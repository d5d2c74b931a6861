import { ParseError } from '../platform/errors.js';
import type { Sysroot } from '../platform/sysroot.js';
import { PolledFile } from './polled-file.js';

/** A sysfs attribute kept open and re-read (pread at 0), opened under the sysroot. */
export function polledSysfs(sysroot: Sysroot, path: string): PolledFile {
  return new PolledFile(sysroot.path(path), path, 64);
}

/**
 * A sysfs file's text without the zero bytes a copy may pad it with: tools that save a sysfs tree
 * page by page (LACT's snapshots) write the kernel's text and then NULs up to 4096 bytes. Only a
 * trailing run goes; a zero byte before the end stays and makes the value garbled.
 */
export function withoutPadding(text: string): string {
  const end = text.search(/\0+$/);
  return end === -1 ? text : text.slice(0, end);
}

/** A sysfs counter or limit: decimal digits only; anything else is a garbled file. */
export function parseUnsigned(text: string, what: string): bigint {
  const t = withoutPadding(text).trim();
  if (!/^\d{1,20}$/.test(t))
    throw new ParseError(`${what}: expected an unsigned integer, found "${t.slice(0, 40)}"`);
  return BigInt(t);
}

/** A sysfs value that may be negative (hwmon temperatures below 0 °C). */
export function parseSigned(text: string, what: string): number {
  const t = withoutPadding(text).trim();
  if (!/^-?\d{1,19}$/.test(t))
    throw new ParseError(`${what}: expected an integer, found "${t.slice(0, 40)}"`);
  return Number(t);
}

/** Reads a whole sysfs file once as an unsigned integer. */
export function readUnsigned(sysroot: Sysroot, path: string): bigint {
  return parseUnsigned(sysroot.readText(path), path);
}

/** One sysfs number kept open and re-read (other backends use it through this name). */
export class SysfsNumberFile {
  private readonly file: PolledFile;

  constructor(
    sysroot: Sysroot,
    readonly path: string,
  ) {
    this.file = polledSysfs(sysroot, path);
  }

  readText(): string {
    return this.file.read().trim();
  }

  /** The file as one decimal integer, parsed without a string; NaN for other content (see lastText()). */
  readDecimal(): number {
    return this.file.readDecimal();
  }

  /** What the last read saw, untrimmed. */
  lastText(): string {
    return this.file.lastText();
  }

  readInteger(): bigint {
    return parseUnsigned(this.file.read(), this.path);
  }

  close(): void {
    this.file.close();
  }
}
