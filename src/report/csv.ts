import type { Report } from '../monitor/report-model.js';
import { seriesUnit } from '../monitor/signals.js';
import { attributionCsvRows } from './attribution.js';

const quote = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/** Rows per chunk of `csvChunks`: large enough to write efficiently, small enough to bound memory. */
const ROWS_PER_CHUNK = 2048;

/**
 * Long format of the raw samples: one row per (round, series, sample); a gap is an empty value.
 * With attribution, one row per figure follows (round "all", kind "attributed", no timestep).
 * Yielded in chunks of lines, so that a long run's file (tens of MB) never sits in memory whole.
 */
export function* csvChunks(report: Report): Generator<string> {
  let rows: string[] = ['run_id,round,hostname,device_group,sensor,kind,unit,timestep,value'];
  const flush = () => {
    const chunk = `${rows.join('\n')}\n`;
    rows = [];
    return chunk;
  };
  for (const round of report.rounds) {
    for (const [i, s] of report.series.entries()) {
      const prefix = [report.runId, round.id, report.host, s.group, s.id, s.kind, seriesUnit(s.kind)]
        .map(quote)
        .join(',');
      const values = round.values[i]!;
      for (const [k, t] of round.times.entries()) {
        const v = values[k]!;
        rows.push(`${prefix},${t},${Number.isFinite(v) ? v : ''}`);
        if (rows.length >= ROWS_PER_CHUNK) yield flush();
      }
    }
  }
  if (report.attribution) {
    for (const r of attributionCsvRows(report.attribution)) {
      const cells = [report.runId, 'all', report.host, r.group, r.sensor, 'attributed', 'J'].map(quote);
      rows.push(`${cells.join(',')},,${Number.isFinite(r.value) ? r.value : ''}`);
    }
  }
  if (rows.length > 0) yield flush();
}

/** The whole CSV as one string. */
export const renderCsv = (report: Report): string => [...csvChunks(report)].join('');
