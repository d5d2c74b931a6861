import { closeSync, existsSync, fsyncSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../monitor/model/report-model.js';
import { errorMessage, JoulegateError, shortValue } from '../platform/errors.js';
import { ioReason } from '../platform/make-dirs.js';
import { writeWhole } from '../platform/whole-file.js';
import { makeOutputDir } from './files.js';
import { reportsTree } from './hdf5.js';
import { writeHdf5To } from './hdf5-file/write-file.js';
import { readHdf5Runs } from './hdf5-read.js';

/*
 * perun's file habit, as an option (`[output] hdf5_file = app`): one `<app>.hdf5` in the data
 * directory holding every run of the app, each run added to it; `export -i <run id>` picks one.
 * The file is never changed in place: the runs it holds and the new one are written to a new
 * file beside it, flushed to disk, and renamed over it, so a crash leaves the old file or the
 * new one, never a part. Monitors adding to one file at the same time take turns through a lock
 * file beside it.
 */

/** The data directory's `<app>.hdf5` is perun's: joulegate does not rewrite it. */
export class PerunAppFileError extends JoulegateError {}

/** How long a monitor waits for another one adding to the same file. */
const LOCK_WAIT_MS = 60_000;
const LOCK_POLL_MS = 50;

/** The accumulating file of a report's app in `dir` (perun's name; `failed_` for a failed run). */
export function appFilePath(report: Report, dir: string): string {
  return join(dir, `${report.failed ? 'failed_' : ''}${report.app.replace(/[^\w.-]/g, '_')}.hdf5`);
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return true; // being written: its holder is alive
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already
  }
}

/** Takes `<file>.lock` (its holder's pid inside; a dead holder's lock is taken over); returns its release. */
async function lock(file: string): Promise<() => void> {
  const path = `${file}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => removeQuietly(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new JoulegateError(`cannot lock ${shortValue(file)}: ${ioReason(err)}`);
    }
    let holder = Number.NaN;
    try {
      holder = Number(readFileSync(path, 'utf8').trim());
    } catch {
      continue; // released meanwhile
    }
    if (!alive(holder)) {
      removeQuietly(path);
      continue;
    }
    if (Date.now() > deadline)
      throw new JoulegateError(
        `${shortValue(file)} is being written by process ${holder} (${shortValue(path)})`,
      );
    await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
  }
}

/** `id`, or perun's `id_1`, `id_2`, … when a run of that id is in the file already. */
function freeRunId(id: string, taken: ReadonlySet<string>): string {
  if (!taken.has(id)) return id;
  for (let n = 1; ; n++) if (!taken.has(`${id}_${n}`)) return `${id}_${n}`;
}

/**
 * Adds `report` as a run to its app's `<app>.hdf5` in `dir` (created when missing); returns the
 * file's path and the run id it has there. A file perun wrote is left alone: its runs hold
 * more than joulegate reads back, and rewriting it would lose them (PerunAppFileError).
 */
export async function addToAppFile(report: Report, dir: string): Promise<{ path: string; runId: string }> {
  makeOutputDir(dir);
  const path = appFilePath(report, dir);
  const release = await lock(path);
  try {
    let runs: Report[] = [];
    if (existsSync(path)) {
      const held = await readHdf5Runs(path);
      if (held === undefined)
        throw new PerunAppFileError(
          `${shortValue(path)} was written by perun; joulegate adds runs only to a file it wrote itself`,
        );
      runs = held;
    }
    const runId = freeRunId(report.runId, new Set(runs.map((r) => r.runId)));
    const tree = reportsTree([...runs, { ...report, runId }]);
    writeWhole({ path }, (fd) => {
      writeHdf5To(fd, tree);
      fsyncSync(fd);
    });
    return { path, runId };
  } catch (err) {
    if (err instanceof JoulegateError) throw err;
    throw new JoulegateError(`cannot add the run to ${shortValue(path)}: ${errorMessage(err)}`);
  } finally {
    release();
  }
}
