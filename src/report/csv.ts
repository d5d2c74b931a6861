import type { Report } from '../monitor/model/report-model.js';
import { seriesUnit } from '../monitor/model/units.js';
import { attributionCsvRows } from './attribution.js';

const quote = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/**
 * Rows per chunk of `csvChunks`. The writer buffers the bytes (files.ts), so a chunk only needs
 * to be small enough that its strings are garbage before V8 would promote them.
 */
export const CSV_ROWS_PER_CHUNK = 64;

/**
 * Long format of the raw samples: one row per (round, series, sample); a gap is an empty value.
 * With attribution, one row per figure follows (round "all", kind "attributed", no timestep).
 * Yielded in chunks of lines, so that a long run's file (tens of MB) never sits in memory whole.
 */
export function* csvChunks(report: Report): Generator<string> {
  yield 'run_id,round,hostname,device_group,sensor,kind,unit,timestep,value\n';
  for (const round of report.rounds) {
    for (const [i, s] of report.series.entries()) {
      const prefix = [report.runId, round.id, report.host, s.group, s.id, s.kind, seriesUnit(s.kind)]
        .map(quote)
        .join(',');
      const values = round.values[i]!;
      for (let k = 0; k < round.times.length; k += CSV_ROWS_PER_CHUNK) {
        const times = numberTexts(round.times, k);
        const texts = numberTexts(values, k);
        let chunk = '';
        for (const [j, t] of times.entries()) chunk += `${prefix},${t},${texts[j] ?? ''}\n`;
        yield chunk;
      }
    }
  }
  const rows: string[] = [];
  if (report.attribution) {
    for (const r of attributionCsvRows(report.attribution)) {
      const cells = [report.runId, 'all', report.host, r.group, r.sensor, 'attributed', 'J'].map(quote);
      rows.push(`${cells.join(',')},,${Number.isFinite(r.value) ? r.value : ''}`);
    }
  }
  if (rows.length > 0) yield `${rows.join('\n')}\n`;
}

/**
 * CSV_ROWS_PER_CHUNK numbers from `start` as text, a gap (NaN, ±Infinity) as ''. JSON.stringify
 * writes a number as String() does, but not through V8's number-to-string cache: every string
 * that cache keeps is promoted to the old generation, which grew by ~10 MB for a 30,000-sample
 * CSV before it was collected.
 */
function numberTexts(xs: readonly number[], start: number): string[] {
  const texts = JSON.stringify(xs.slice(start, start + CSV_ROWS_PER_CHUNK))
    .slice(1, -1)
    .split(',');
  return texts.map((t) => (t === 'null' ? '' : t));
}

/** The whole CSV as one string. */
export const renderCsv = (report: Report): string => [...csvChunks(report)].join('');
