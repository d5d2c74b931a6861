import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { Report } from '../monitor/model/report-model.js';
import { errorMessage, JoulegateError, shortValue } from '../platform/errors.js';
import { reportFromJson } from './json.js';

/**
 * Reads a report written as json or hdf5 (chosen by the file's suffix) in this thread, without
 * bounds: for files this process wrote or a worker of bounded-read.ts. `runId` picks a run of
 * a perun .hdf5 or .json file, which holds every run of its app.
 */
export async function readReportHere(path: string, runId?: string): Promise<Report> {
  const ext = extname(path).toLowerCase();
  if (ext === '.hdf5' || ext === '.h5') return (await import('./hdf5-read.js')).readHdf5(path, runId);
  if (ext !== '.json')
    throw new JoulegateError(`${shortValue(path)}: can only import .json or .hdf5 reports`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new JoulegateError(`cannot read ${shortValue(path)}: ${errorMessage(err)}`);
  }
  // perun's JSON export holds every run of its app, as its .hdf5 file does.
  const perun = await import('./perun-json-read.js');
  if (perun.looksLikePerunJson(text)) return perun.readPerunJson(text, path, runId);
  if (runId !== undefined) throw new JoulegateError("--id picks a run of perun's .hdf5 or .json file only");
  return reportFromJson(text, path);
}
