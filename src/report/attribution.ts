import type { AttributionGroupReport, AttributionReport } from '../attribution/summary.js';
import { withUnit } from './units.js';

/**
 * The attribution section of every report format (`monitor --attribute`): one row per device
 * group with the node's energy next to the app's share, the named consumers', unattributed and
 * idle; and one row per named consumer. text (and html, which embeds it) render these rows.
 */

const percentOf = (part: number, whole: number) =>
  whole > 0 && Number.isFinite(part) ? `${((100 * part) / whole).toFixed(1)} %` : 'n/a';

export const ATTRIBUTION_HEADER = [
  'GROUP',
  'NODE',
  'APP',
  'APP SHARE',
  'OTHER CONSUMERS',
  'UNATTRIBUTED',
  'IDLE',
  'MISSING',
] as const;

function groupRow(g: AttributionGroupReport): string[] {
  return [
    g.method === 'estimated' ? `${g.group} (estimated)` : g.group,
    withUnit(g.measured, 'J'),
    withUnit(g.app, 'J'),
    percentOf(g.app, g.measured),
    withUnit(g.others, 'J'),
    withUnit(g.unattributed, 'J'),
    withUnit(g.idle, 'J'),
    g.missingIntervals > 0 ? `${g.missingIntervals} (${g.missingSeconds.toFixed(1)} s)` : '0',
  ];
}

export function attributionRows(a: AttributionReport): string[][] {
  return a.groups.map(groupRow);
}

/** Lines under the table: what the figures are, each named consumer, and why some are unknown. */
export function attributionLines(a: AttributionReport): string[] {
  const out = [
    `APP is the ${a.appIs}; idle share: ${a.idleShare}. NODE = APP + OTHER CONSUMERS + UNATTRIBUTED + IDLE ` +
      '(exact to 1 µJ in every interval); UNATTRIBUTED is what no named consumer ran (other users, the kernel).',
  ];
  if (a.consumerIds.length === 0)
    out.push('Other consumers: none named (--pid, --cgroup, --slurm-job, --container).');
  a.consumerIds.forEach((id, i) => {
    const parts = a.groups.map(
      (g) => `${g.group} ${withUnit(g.consumers[i]!, 'J')} (${percentOf(g.consumers[i]!, g.measured)})`,
    );
    out.push(`  ${id}: ${parts.join(', ') || 'no energy source'}`);
  });
  for (const n of a.notes) out.push(`Note: ${n}`);
  return out;
}

/** CSV rows in the samples' long format (round "all", kind "attributed"), one per figure. */
export function attributionCsvRows(a: AttributionReport): { group: string; sensor: string; value: number }[] {
  return a.groups.flatMap((g) => [
    { group: g.group, sensor: 'attribution:node', value: g.measured },
    { group: g.group, sensor: 'attribution:app', value: g.app },
    ...a.consumerIds.map((id, i) => ({
      group: g.group,
      sensor: `attribution:${id}`,
      value: g.consumers[i]!,
    })),
    { group: g.group, sensor: 'attribution:others', value: g.others },
    { group: g.group, sensor: 'attribution:unattributed', value: g.unattributed },
    { group: g.group, sensor: 'attribution:idle', value: g.idle },
  ]);
}
