import { listInWords } from '../../platform/format.js';
import { DEVICE_GROUPS, type DeviceGroup, type SeriesSpec } from '../../platform/signal-catalogue.js';
import type { Report } from './report-model.js';

/** Rounds the report's statistics cover: those kept whole and those left out. */
export function roundCount(r: Report): number {
  return r.rounds.length + (r.omittedRounds ?? 0);
}

/** File name stem: perun's `<app>_<run id>`, `failed_` in front of a failed run. */
export function reportStem(r: Report): string {
  const app = r.app.replace(/[^\w.-]/g, '_');
  return `${r.failed ? 'failed_' : ''}${app}_${r.runId.replace(/[^\w.-]/g, '_')}`;
}

/** Groups that have an energy or power series, in report order. */
function energyGroupsOf(series: readonly SeriesSpec[]): DeviceGroup[] {
  const groups = new Set(series.filter((s) => s.kind === 'energy' || s.kind === 'power').map((s) => s.group));
  return DEVICE_GROUPS.filter((g) => groups.has(g));
}

/**
 * What the energy figures cover, decided by what was read: `cpu measured; ram and board not
 * readable`. A group whose energy series never gave a value has no source in the report.
 */
export function coverageStatement(report: Pick<Report, 'series' | 'sources'>): string {
  const method = new Map(report.sources.map((s) => [s.group, s.method]));
  const measured: string[] = [];
  const estimated: string[] = [];
  const unread: string[] = [];
  for (const g of energyGroupsOf(report.series)) {
    const m = method.get(g);
    (m === undefined ? unread : m === 'estimated' ? estimated : measured).push(g);
  }
  for (const s of report.sources)
    if (s.method === 'estimated' && !estimated.includes(s.group)) estimated.push(s.group);
  const parts = [
    measured.length > 0 ? `${listInWords(measured)} measured` : '',
    estimated.length > 0 ? `${listInWords(estimated)} estimated` : '',
    unread.length > 0 ? `${listInWords(unread)} not readable` : '',
  ];
  return parts.filter(Boolean).join('; ') || 'no energy source';
}
