import type { Report } from '../monitor/report-model.js';
import { seriesUnit } from '../monitor/signals.js';
import { attributionCsvRows } from './attribution.js';

const quote = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/**
 * Long format of the raw samples: one row per (round, series, sample); a gap is an empty value.
 * With attribution, one row per figure follows (round "all", kind "attributed", no timestep).
 */
export function renderCsv(report: Report): string {
  const rows = ['run_id,round,hostname,device_group,sensor,kind,unit,timestep,value'];
  for (const round of report.rounds) {
    report.series.forEach((s, i) => {
      const prefix = [report.runId, round.id, report.host, s.group, s.id, s.kind, seriesUnit(s.kind)]
        .map(quote)
        .join(',');
      round.times.forEach((t, k) => {
        const v = round.values[i]![k]!;
        rows.push(`${prefix},${t},${Number.isFinite(v) ? v : ''}`);
      });
    });
  }
  if (report.attribution) {
    for (const r of attributionCsvRows(report.attribution)) {
      const cells = [report.runId, 'all', report.host, r.group, r.sensor, 'attributed', 'J'].map(quote);
      rows.push(`${cells.join(',')},,${Number.isFinite(r.value) ? r.value : ''}`);
    }
  }
  return `${rows.join('\n')}\n`;
}
