import { closeSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { type Report, reportStem } from '../monitor/report-model.js';
import { errorMessage, JoulegateError } from '../platform/errors.js';
import { createUnique, writeUnique } from './files.js';
import { reportFromJson, reportToJson } from './json.js';

/** Output formats: file extension and renderer; heavy renderers are imported on first use. */
const WRITERS: Record<string, { ext: string; render: (r: Report) => Promise<string> }> = {
  text: { ext: 'txt', render: async (r) => (await import('./text.js')).renderText(r) },
  json: { ext: 'json', render: async (r) => reportToJson(r) },
  csv: { ext: 'csv', render: async (r) => (await import('./csv.js')).renderCsv(r) },
  bench: { ext: 'bench.json', render: async (r) => (await import('./bench.js')).renderBench(r) },
  html: { ext: 'html', render: async (r) => (await import('./html.js')).renderHtml(r) },
};

export const OUTPUT_FORMATS = [...Object.keys(WRITERS), 'hdf5'];

/** Writes one format into `dir` under a name no other process holds; returns the path. */
export async function writeFormat(report: Report, format: string, dir: string): Promise<string> {
  const stem = reportStem(report);
  if (format === 'hdf5') {
    const { fd, path } = createUnique(dir, stem, 'hdf5');
    closeSync(fd);
    await (await import('./hdf5.js')).writeHdf5(report, path);
    return path;
  }
  const w = WRITERS[format];
  if (!w) throw new JoulegateError(`unknown format ${format} (expected one of ${OUTPUT_FORMATS.join(', ')})`);
  return writeUnique(dir, stem, w.ext, await w.render(report));
}

/** Reads a report written as json or hdf5 (chosen by the file's suffix). */
export async function readReport(path: string): Promise<Report> {
  const ext = extname(path).toLowerCase();
  if (ext === '.hdf5' || ext === '.h5') return (await import('./hdf5.js')).readHdf5(path);
  if (ext !== '.json') throw new JoulegateError(`${path}: can only import .json or .hdf5 reports`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new JoulegateError(`cannot read ${path}: ${errorMessage(err)}`);
  }
  return reportFromJson(text, path);
}

export function formatsOf(list: string): string[] {
  return [...new Set(list.split(/[\s,]+/).filter(Boolean))];
}
