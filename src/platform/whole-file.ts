import { closeSync, existsSync, linkSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { JoulegateError, shortValue } from './errors.js';
import { ioReason } from './make-dirs.js';

/*
 * Output files appear whole or not at all: written under a temporary name in their own
 * directory and moved into place only once complete; on failure the temporary file is removed.
 * A reader (or a crash) never sees a half-written or empty report.
 */

/** Where a finished file goes: a fixed path (replaced when present), or a free name in `dir`. */
export type Destination = { path: string } | { dir: string; stem: string; ext: string };

/** The files of `<dir>` a destination may take, in order of preference. */
function* candidates(dest: Destination): Generator<string> {
  if ('path' in dest) {
    yield dest.path;
    return;
  }
  for (let n = 0; n < 10_000; n++) yield join(dest.dir, `${dest.stem}${n === 0 ? '' : `_${n}`}.${dest.ext}`);
}

const directoryOf = (dest: Destination) => ('path' in dest ? dirname(dest.path) : dest.dir);

/**
 * Moves the complete temp file to the destination. A free name is claimed with link(2), which
 * fails when the name exists: monitors running at the same time never overwrite each other's
 * files. A filesystem without hard links gets a rename after a look (a small race, no worse
 * than a file system without O_EXCL).
 */
function publish(temp: string, dest: Destination): string {
  if ('path' in dest) {
    renameSync(temp, dest.path);
    return dest.path;
  }
  for (const path of candidates(dest)) {
    try {
      linkSync(temp, path);
      unlinkSync(temp);
      return path;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue;
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
      if (existsSync(path)) continue;
      renameSync(temp, path);
      return path;
    }
  }
  throw new JoulegateError(
    `no free file name for ${shortValue(`${dest.stem}.${dest.ext}`)} in ${shortValue(dest.dir)}`,
  );
}

/**
 * node:crypto, loaded when a temp name is first made: loading it costs a few ms of every start
 * of the one-shot commands that import this module and write no file (docs/cli.md, "Start-up").
 */
const crypto = () => createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');

/** A temp name beside the destination, hidden, unique to this process and call. */
function tempPath(dest: Destination): string {
  const name = 'path' in dest ? basename(dest.path) : `${dest.stem}.${dest.ext}`;
  // Cut: the temp name must fit NAME_MAX even when the final name only just does.
  return join(
    directoryOf(dest),
    `.${name.slice(0, 200)}.${process.pid}-${crypto().randomBytes(4).toString('hex')}.tmp`,
  );
}

/** A file being written under its temp name: committed into place, or discarded. */
export class PendingFile {
  readonly fd: number;
  private readonly temp: string;
  private done = false;

  constructor(
    private readonly dest: Destination,
    mode = 0o644,
  ) {
    this.temp = tempPath(dest);
    try {
      this.fd = openSync(this.temp, 'wx', mode);
    } catch (err) {
      throw new JoulegateError(`cannot open ${shortValue(finalName(dest))} for writing: ${ioReason(err)}`);
    }
  }

  /** Closes the file and moves it into place; returns its path. Discards it on failure. */
  commit(): string {
    if (this.done) throw new JoulegateError(`${shortValue(finalName(this.dest))} is already closed`);
    this.done = true;
    try {
      closeSync(this.fd);
      return publish(this.temp, this.dest);
    } catch (err) {
      removeQuietly(this.temp);
      if (err instanceof JoulegateError) throw err;
      throw new JoulegateError(`cannot write ${shortValue(finalName(this.dest))}: ${ioReason(err)}`);
    }
  }

  /** Closes and removes the temp file: nothing of it stays. */
  discard(): void {
    if (this.done) return;
    this.done = true;
    try {
      closeSync(this.fd);
    } finally {
      removeQuietly(this.temp);
    }
  }
}

const finalName = (dest: Destination) =>
  'path' in dest ? dest.path : join(dest.dir, `${dest.stem}.${dest.ext}`);

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already: the error that brought us here is the one to tell
  }
}

/**
 * Writes a file through `fill(fd)` and moves it into place when `fill` returns; returns its
 * path. When anything fails nothing is left behind; a failed system call (a full disk) becomes
 * one line naming the file, any other error of `fill` is thrown as it is.
 */
export function writeWhole(dest: Destination, fill: (fd: number) => void, mode = 0o644): string {
  const file = new PendingFile(dest, mode);
  try {
    fill(file.fd);
  } catch (err) {
    file.discard();
    if ((err as NodeJS.ErrnoException).syscall === undefined) throw err;
    throw new JoulegateError(`cannot write ${shortValue(finalName(dest))}: ${ioReason(err)}`);
  }
  return file.commit();
}

/** writeSync may write less than it is given (a full disk, a signal): the rest follows. */
export function writeAll(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
}
