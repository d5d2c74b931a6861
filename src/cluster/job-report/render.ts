import { markdownTable } from '../../report/text.js';
import { withUnit } from '../../report/units.js';
import type { JobEnergyReport } from './job-energy.js';

/**
 * The job report (`joulegate job-report`) in the monitor's formats: text (markdown tables, as
 * the monitor prints), JSON (gaps as null, as every report) and CSV (long format, one row per
 * node and device). A node or device without data is `n/a` / empty, never 0.
 */
export const JOB_REPORT_FORMATS = ['text', 'json', 'csv'] as const;
export type JobReportFormat = (typeof JOB_REPORT_FORMATS)[number];

const sig = (v: number) => (Number.isFinite(v) ? v.toPrecision(3) : 'n/a');
const percent = (v: number) => `${v.toFixed(1)} %`;
const deviceName = (kind: string, index: string) => (index === '' ? kind : `${kind} ${index}`);

export function renderJobText(r: JobEnergyReport): string {
  const title = r.job === '' ? 'Job energy' : `Job ${r.job} energy`;
  const share = r.jobShare;
  const devices = (list: readonly { kind: string; index: string; joules: number }[]) =>
    list.map((d) => `${deviceName(d.kind, d.index)} ${withUnit(d.joules, 'J')}`).join(', ') || 'no data';
  const nodeRows = r.nodes.map((n) => [
    n.node,
    withUnit(n.joules, 'J'),
    percent(n.coverage),
    n.rule,
    devices(n.devices),
    ...(share === undefined
      ? []
      : [
          withUnit(n.job?.joules ?? Number.NaN, 'J'),
          percent(n.job?.coverage ?? 0),
          devices(n.job?.devices ?? []),
        ]),
  ]);
  const header = ['Node', 'Energy', 'Coverage', 'Total rule', 'Devices'];
  if (share !== undefined) header.push('Job share', 'Share coverage', 'Share by device');
  const lines = [
    `${title}: ${r.start} to ${r.end} (${r.windowS.toFixed(1)} s), ${r.nodes.length} node(s), from ${r.source}`,
    '',
    markdownTable(header, nodeRows),
    '',
    `Total: ${withUnit(r.energy, 'J')}${r.complete ? '' : ' (incomplete: a lower bound, see the gaps below)'}; ` +
      `${sig(r.facilityEnergy / 3.6e6)} kWh at PUE ${r.factors.pue}, ` +
      `${sig(r.co2)} gCO2e, ${sig(r.money)} ${r.priceUnit}.`,
  ];
  if (share !== undefined) {
    const of =
      Number.isFinite(share.energy) && r.energy > 0
        ? ` (${percent((share.energy / r.energy) * 100)} of the nodes' energy)`
        : '';
    lines.push(
      `Job share (${share.consumer}): ${withUnit(share.energy, 'J')}${of}${share.complete ? '' : ' (incomplete: a lower bound)'}.`,
      `Method: ${share.method}.`,
    );
  }
  if (r.gaps.length > 0)
    lines.push('', 'Gaps (missing scrapes are not zero energy):', ...r.gaps.map((g) => `- ${g}`));
  return `${lines.join('\n')}\n`;
}

/** JSON with NaN as null (the convention of every joulegate report). */
export function renderJobJson(r: JobEnergyReport): string {
  return `${JSON.stringify(r, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`;
}

const quote = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
const num = (v: number) => (Number.isFinite(v) ? String(v) : '');

export function renderJobCsv(r: JobEnergyReport): string {
  const rows = ['job,node,device,index,energy_j,covered_s,window_s,gaps'];
  const row = (node: string, device: string, index: string, joules: number, coveredS: number, gaps: string) =>
    rows.push(
      [r.job, node, device, index, num(joules), num(coveredS), num(r.windowS), gaps].map(quote).join(','),
    );
  for (const n of r.nodes) {
    for (const d of n.devices) row(n.node, d.kind, d.index, d.joules, d.coveredS, String(d.gaps.length));
    row(n.node, 'node', '', n.joules, (n.coverage / 100) * r.windowS, '');
    // The job's share: one row per device kind and one for the node, named job-<kind> / job.
    for (const d of n.job?.devices ?? [])
      row(n.node, `job-${d.kind}`, '', d.joules, d.coveredS, String(d.gaps.length));
    if (n.job !== undefined) row(n.node, 'job', '', n.job.joules, (n.job.coverage / 100) * r.windowS, '');
  }
  rows.push(
    [r.job, '', 'total', '', num(r.energy), '', num(r.windowS), String(r.gaps.length)].map(quote).join(','),
  );
  if (r.jobShare !== undefined)
    rows.push(
      [r.job, '', 'job-total', '', num(r.jobShare.energy), '', num(r.windowS), ''].map(quote).join(','),
    );
  return `${rows.join('\n')}\n`;
}

export function renderJobReport(r: JobEnergyReport, format: JobReportFormat): string {
  return { text: renderJobText, json: renderJobJson, csv: renderJobCsv }[format](r);
}
