import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { reportStem } from '../monitor/model/report-facts.js';
import type { Report } from '../monitor/model/report-model.js';
import { errorMessage, JoulegateError } from '../platform/errors.js';
import { fullCollection } from '../platform/heap.js';
import { checkOutputDir, writeUnique } from './files.js';
import { jsonChunks } from './json.js';

/** Output formats: file extension and renderer; heavy renderers are imported on first use. */
const WRITERS: Record<string, { ext: string; render: (r: Report) => Promise<string | Iterable<string>> }> = {
  text: { ext: 'txt', render: async (r) => (await import('./text.js')).renderText(r) },
  json: { ext: 'json', render: async (r) => jsonChunks(r) },
  csv: { ext: 'csv', render: async (r) => (await import('./csv.js')).csvChunks(r) },
  bench: { ext: 'bench.json', render: async (r) => (await import('./bench.js')).renderBench(r) },
  html: { ext: 'html', render: async (r) => (await import('./html.js')).renderHtml(r) },
};

export const OUTPUT_FORMATS = [...Object.keys(WRITERS), 'hdf5'];

/** How the files are written: `appFile`, hdf5 goes into the app's accumulating `<app>.hdf5`. */
export interface WriteOptions {
  appFile?: boolean;
}

/**
 * Writes one format into `dir` under a name no other process holds; returns the path (for the
 * accumulating HDF5 file, the run id there when it had to differ).
 */
export async function writeFormat(
  report: Report,
  format: string,
  dir: string,
  opts: WriteOptions = {},
): Promise<string> {
  const stem = reportStem(report);
  if (format === 'hdf5' && opts.appFile) {
    const { addToAppFile, PerunAppFileError } = await import('./hdf5-app-file.js');
    try {
      const added = await addToAppFile(report, dir);
      return added.runId === report.runId ? added.path : `${added.path} (as run ${added.runId})`;
    } catch (err) {
      // perun's own <app>.hdf5 stays as it is; this run's file goes beside it.
      if (!(err instanceof PerunAppFileError)) throw err;
      return `${await writeFormat(report, format, dir)} (${err.message})`;
    }
  }
  if (format === 'hdf5') {
    const { writeHdf5 } = await import('./hdf5.js');
    return writeUnique(dir, stem, 'hdf5', (fd) => writeHdf5(report, fd));
  }
  const w = WRITERS[format];
  if (!w) throw new JoulegateError(`unknown format ${format} (expected one of ${OUTPUT_FORMATS.join(', ')})`);
  return writeUnique(dir, stem, w.ext, await w.render(report));
}

/**
 * Checks before a run that its reports can be written: known formats, and an output directory
 * that exists (or is created) and takes files. (HDF5 is written without a library: hdf5-file/.)
 */
export async function checkOutput(formats: readonly string[], dir: string): Promise<void> {
  for (const f of formats)
    if (!OUTPUT_FORMATS.includes(f))
      throw new JoulegateError(`unknown format ${f} (expected one of ${OUTPUT_FORMATS.join(', ')})`);
  checkOutputDir(dir);
}

/** Where a report goes that cannot be written where asked: the temp directories. */
function fallbackDirs(failed: string): string[] {
  return [...new Set([tmpdir(), '/tmp', '/var/tmp'])].filter((d) => resolve(d) !== resolve(failed));
}

/** Writes `format` to the first fallback directory that takes it; undefined when none does. */
async function writeFallback(report: Report, format: string, failedDir: string): Promise<string | undefined> {
  for (const dir of fallbackDirs(failedDir)) {
    try {
      return await writeFormat(report, format, dir);
    } catch {
      // the next directory, then JSON
    }
  }
  return undefined;
}

/**
 * Writes every format into `dir`, telling `say` one line per file. A format that fails there is
 * written to a temp directory instead, and one that cannot be rendered at all is kept as JSON
 * (`joulegate export` converts it later): a measured run is never lost. Returns whether every
 * format went where it was asked.
 */
export async function writeReports(
  report: Report,
  formats: readonly string[],
  dir: string,
  say: (line: string) => void,
  opts: WriteOptions = {},
): Promise<boolean> {
  let allWritten = true;
  let jsonFallback: string | undefined;
  for (const format of formats) {
    // Each renderer's garbage (rows, strings, encoded buffers) is collected before the next
    // one allocates, or it piles up: with every format of a 60 s run at 100 Hz the peak RSS
    // was 62 MB instead of 57 MB (bench/monitor-formats.ts). A full collection of the small
    // heap takes a few ms, once per file.
    fullCollection()();
    try {
      say(`wrote ${await writeFormat(report, format, dir, opts)}`);
    } catch (err) {
      allWritten = false;
      const failed = `could not write the ${format} report to ${dir}: ${errorMessage(err)}`;
      const elsewhere = await writeFallback(report, format, dir);
      if (elsewhere !== undefined) {
        say(`${failed}; wrote it to ${elsewhere} instead`);
        continue;
      }
      jsonFallback ??= format === 'json' ? undefined : await writeFallback(report, 'json', dir);
      say(
        jsonFallback === undefined
          ? `${failed}; no temp directory took it either, the ${format} report is lost`
          : `${failed}; saved the report as ${jsonFallback} instead (convert it: joulegate export ${jsonFallback} ${format})`,
      );
    }
  }
  return allWritten;
}

/**
 * Reads a report written as json or hdf5 (chosen by the file's suffix), ours or perun's, within
 * bounds of time and memory (bounded-read.ts): files to export come from anywhere. `runId`
 * picks a run of perun's .hdf5 or .json file, which holds every run of its app.
 */
export async function readReport(path: string, runId?: string): Promise<Report> {
  return (await import('./bounded-read.js')).readReportBounded(path, runId);
}

export function formatsOf(list: string): string[] {
  return [...new Set(list.split(/[\s,]+/).filter(Boolean))];
}
