import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  type Stats,
} from 'node:fs';
import { writeFileAtomic } from '../platform/atomic-file.js';
import { makeDirs } from '../platform/make-dirs.js';

/**
 * File primitives for the daemon's own state (access lists, session records, saved controls).
 * Everything the daemon trusts must be a plain file or directory owned by the daemon's uid and
 * gid with an exact mode: anything else may have been planted by someone else, so it is moved
 * aside as `<path>-<uuid>-INVALID` (kept for the admin to inspect) and treated as absent.
 */

/** Where warnings go; the default writes one line on stderr (the journal under systemd). */
export type Log = (line: string) => void;

export const stderrLog: Log = (line) => {
  process.stderr.write(`${line}\n`);
};

export interface SecureFileOptions {
  log?: Log;
  /** secureReadFile: refuse (FileTooLargeError) a file larger than this, without reading it. */
  maxBytes?: number;
}

/** secureReadFile refused a file over its size limit; the file is left where it is. */
export class FileTooLargeError extends Error {
  constructor(
    readonly path: string,
    readonly size: number,
    readonly maxBytes: number,
  ) {
    super(`${path} is ${size} bytes, more than the limit of ${maxBytes}`);
    this.name = 'FileTooLargeError';
  }
}

/** Mode of a file the daemon writes and will read back. */
export const SECURE_FILE_MODE = 0o600;
/** Mode of a directory the daemon creates for its own state. */
export const SECURE_DIR_MODE = 0o700;

function daemonOwner(): { uid: number; gid: number } {
  return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
}

/** Why `st` must not be trusted as a `kind` of mode `mode`, or undefined when it is fine. */
export function insecureReason(st: Stats, kind: 'file' | 'directory', mode: number): string | undefined {
  if (st.isSymbolicLink()) return 'is a symbolic link';
  if (kind === 'file' && !st.isFile()) return 'is not a regular file';
  if (kind === 'directory' && !st.isDirectory()) return 'is not a directory';
  const actual = st.mode & 0o7777;
  if (actual !== mode) return `has mode ${octal(actual)}, expected ${octal(mode)}`;
  const owner = daemonOwner();
  if (st.uid !== owner.uid || st.gid !== owner.gid) {
    return `is owned by uid ${st.uid} gid ${st.gid}, expected uid ${owner.uid} gid ${owner.gid}`;
  }
  return undefined;
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

/**
 * Renames an untrusted path out of the way and says so. Returns the new name.
 * The uuid makes the name unique so repeated quarantines never overwrite earlier evidence.
 */
export function quarantine(path: string, reason: string, log: Log = stderrLog): string {
  const target = `${path}-${randomUUID()}-INVALID`;
  renameSync(path, target);
  log(`Warning: <joulegate>: ${path} ${reason}; renamed to ${target}`);
  return target;
}

/** lstat, or undefined when nothing is there. */
export function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Makes sure `path` is a directory of exactly `mode` owned by the daemon. An existing path that
 * is not (a symlink, a file, another mode or owner) is quarantined and a fresh directory made.
 * Missing parents are created with the same mode.
 */
export function secureMakeDirs(path: string, mode = SECURE_DIR_MODE, options: SecureFileOptions = {}): void {
  const st = lstatOrUndefined(path);
  if (st) {
    const reason = insecureReason(st, 'directory', mode);
    if (reason === undefined) return;
    quarantine(path, reason, options.log);
  }
  makeDirs(path, mode);
  // mkdir's mode is filtered by the umask; the contract is the exact mode.
  chmodSync(path, mode);
}

/** Writes `contents` to `path` atomically with mode 0600 (see writeFileAtomic). */
export function secureMakeFile(path: string, contents: string | Uint8Array): void {
  writeFileAtomic(path, contents, SECURE_FILE_MODE);
}

/**
 * Like secureMakeFile, but without fsync: for records that describe running processes (session
 * records). The rename keeps them atomic for any reader, and what is written sits in the page
 * cache, which outlives a crash of the daemon; only a crash of the kernel loses it, and that ends
 * every process such a record could describe. (GEOPM writes its session files the same way,
 * without fsync.) Written at once, on the event loop: in the run directory (tmpfs under /run)
 * that is tens of µs, where five steps through the thread pool took milliseconds on a busy node,
 * and a batch server's client waits for its session record before it may connect.
 */
export function secureWriteRecord(path: string, contents: string): void {
  writeFileAtomic(path, contents, SECURE_FILE_MODE, false);
}

/** The whole file at `fd`, or FileTooLargeError when it has more than `maxBytes` (also if it grows). */
function readAtMost(fd: number, path: string, maxBytes: number | undefined): string {
  if (maxBytes === undefined) return readFileSync(fd, 'utf8');
  const size = fstatSync(fd).size;
  if (size > maxBytes) throw new FileTooLargeError(path, size, maxBytes);
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(Math.max(size, 4096), maxBytes + 1 - total));
    const n = readSync(fd, chunk, 0, chunk.length, null);
    if (n === 0) break;
    chunks.push(chunk.subarray(0, n));
    total += n;
    if (total > maxBytes) throw new FileTooLargeError(path, fstatSync(fd).size, maxBytes);
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

/**
 * Reads a file the daemon wrote earlier. Returns undefined when it is missing, and also when it
 * cannot be trusted (symlink, not a regular file, mode not exactly 0600, other owner): then it is
 * quarantined and a warning logged, so the caller falls back to its secure default.
 */
export function secureReadFile(path: string, options: SecureFileOptions = {}): string | undefined {
  const st = lstatOrUndefined(path);
  if (!st) return undefined;
  const pathReason = insecureReason(st, 'file', SECURE_FILE_MODE);
  if (pathReason !== undefined) {
    quarantine(path, pathReason, options.log);
    return undefined;
  }
  // O_NOFOLLOW/O_NONBLOCK: the path may have been swapped for a symlink or FIFO since lstat;
  // the checks are repeated on the opened descriptor, which is what is actually read.
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') {
      quarantine(path, 'is a symbolic link', options.log);
      return undefined;
    }
    throw err;
  }
  try {
    const fdReason = insecureReason(fstatSync(fd), 'file', SECURE_FILE_MODE);
    if (fdReason !== undefined) {
      quarantine(path, fdReason, options.log);
      return undefined;
    }
    return readAtMost(fd, path, options.maxBytes);
  } finally {
    closeSync(fd);
  }
}
