/**
 * Errors that carry a GEOPM-style error code, so CLIs can map them to exit statuses and the
 * daemon to D-Bus error names. Codes follow geopm_error.h (negative integers).
 */
export enum ErrorCode {
  Runtime = -1,
  Logic = -2,
  Invalid = -3,
  FileParse = -4,
  LevelRange = -5,
  NotImplemented = -6,
  PlatformUnsupported = -7,
  MsrOpen = -8,
  MsrRead = -9,
  MsrWrite = -10,
  Init = -11,
  Permission = -12,
}

export class JoulegateError extends Error {
  readonly code: ErrorCode;
  constructor(message: string, code: ErrorCode = ErrorCode.Runtime) {
    super(message);
    this.name = 'JoulegateError';
    this.code = code;
  }
}

/** Bad argument from a caller (unknown name, bad domain, index out of range, NaN value). */
export class InvalidArgumentError extends JoulegateError {
  constructor(message: string) {
    super(message, ErrorCode.Invalid);
    this.name = 'InvalidArgumentError';
  }
}

/** The hardware file exists but the caller may not use it. */
export class PermissionError extends JoulegateError {
  constructor(message: string) {
    super(message, ErrorCode.Permission);
    this.name = 'PermissionError';
  }
}

/** A file could be read but its content is not what the kernel writes there. */
export class ParseError extends JoulegateError {
  constructor(message: string) {
    super(message, ErrorCode.FileParse);
    this.name = 'ParseError';
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** Characters of a value an error line keeps: its head and tail, this many in all. */
const SHORT_VALUE = 80;

/**
 * A value from a user or a file (a name, a path, a string read back) as an error line quotes
 * it: control characters escaped, so the line stays one line, and a long value cut to its head
 * and tail with its length, so a 100 KB string does not become a 100 KB error.
 */
export function shortValue(value: string, max = SHORT_VALUE): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped
  const oneLine = (s: string) => (/[\u0000-\u001f\u007f]/.test(s) ? JSON.stringify(s).slice(1, -1) : s);
  if (value.length <= max) return oneLine(value);
  const half = Math.floor(max / 2);
  return `${oneLine(value.slice(0, half))}…${oneLine(value.slice(-half))} (${value.length} characters)`;
}
