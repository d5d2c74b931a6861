import { describeHostTotal } from '../monitor/model/host-total.js';
import { coverageStatement, roundCount } from '../monitor/model/report-facts.js';
import type { GroupMetrics, HostMetrics, Report, Stat } from '../monitor/model/report-model.js';
import { collapseDiagnostics } from '../monitor/model/unavailable.js';
import { listInWords } from '../platform/format.js';
import type { DeviceGroup } from '../platform/signal-catalogue.js';
import { ATTRIBUTION_HEADER, attributionLines, attributionRows } from './attribution.js';
import { meanStdUnit, withUnit } from './units.js';

/** A markdown table with right-aligned columns (pandas to_markdown(stralign="right") look). */
export function markdownTable(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
  const rule = `|${widths.map((w) => `${'-'.repeat(w + 1)}:`).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

type Row = { round: string; host: string; metrics: HostMetrics; all: boolean };

const g = (m: HostMetrics, group: DeviceGroup): GroupMetrics | undefined => m.groups[group];
const measuredPower = (x: GroupMetrics | undefined) => (x && x.method !== 'estimated' ? x.power : Number.NaN);

interface Column {
  name: string;
  /** The number shown (NaN = n/a); a column only appears when some row has one. */
  pick: (r: Row) => number;
  unit: string;
}
const groupColumn = (
  name: string,
  group: DeviceGroup,
  field: 'power' | 'util' | 'memory',
  unit: string,
): Column => ({
  name,
  unit,
  pick: (r) => {
    const gm = g(r.metrics, group);
    return field === 'power' ? measuredPower(gm) : (gm?.[field] ?? Number.NaN);
  },
});

// perun's column set, in its order, plus GPU_UTIL and the estimate; one generic reader.
const COLUMNS: readonly Column[] = [
  { name: 'RUNTIME', unit: 's', pick: (r) => r.metrics.runtime },
  { name: 'ENERGY', unit: 'J', pick: (r) => (r.all ? r.metrics.facilityEnergy : r.metrics.energy) },
  { name: 'POWER', unit: 'W', pick: (r) => r.metrics.power },
  groupColumn('CPU_POWER', 'cpu', 'power', 'W'),
  groupColumn('CPU_UTIL', 'cpu', 'util', '%'),
  groupColumn('GPU_POWER', 'gpu', 'power', 'W'),
  groupColumn('GPU_UTIL', 'gpu', 'util', '%'),
  groupColumn('GPU_MEM', 'gpu', 'memory', 'B'),
  groupColumn('DRAM_POWER', 'ram', 'power', 'W'),
  groupColumn('DRAM_MEM', 'ram', 'memory', 'B'),
  { name: 'EST_CPU_POWER (estimated)', unit: 'W', pick: (r) => r.metrics.estimatedPower },
];

function roundsTable(report: Report): string {
  const rows: Row[] = report.rounds.flatMap((r) => [
    { round: r.id, host: 'All', metrics: r.metrics.host, all: true },
    { round: r.id, host: report.host, metrics: r.metrics.host, all: false },
  ]);
  const cols = COLUMNS.filter((c) => rows.some((r) => Number.isFinite(c.pick(r))));
  return markdownTable(
    ['Round #', 'Host', ...cols.map((c) => c.name)],
    rows.map((r) => [r.round, r.host, ...cols.map((c) => withUnit(c.pick(r), c.unit))]),
  );
}

function regionsTable(report: Report): string {
  // Measured power without energy (perun's regions) is not an estimate.
  const estimatedOnly = report.regions.every(
    (r) => !Number.isFinite(r.energy.mean) && !Number.isFinite(r.power.mean),
  );
  // perun's utilisation columns, where a series was sampled (older reports have none).
  const utilColumns = (
    [
      ['Avg CPU Util', (r) => r.cpuUtil],
      ['Avg GPU Util', (r) => r.gpuUtil],
    ] as const satisfies readonly [string, (r: Report['regions'][number]) => Stat | undefined][]
  ).filter(([, pick]) => report.regions.some((r) => Number.isFinite(pick(r)?.mean)));
  return markdownTable(
    [
      'Region',
      'Avg Calls / Round',
      'Avg Runtime',
      estimatedOnly ? 'Avg Energy (estimated)' : 'Avg Energy',
      estimatedOnly ? 'Avg Power (estimated)' : 'Avg Power',
      ...utilColumns.map(([title]) => title),
    ],
    report.regions.map((r) => {
      const energy = estimatedOnly ? r.estimatedEnergy : r.energy;
      const power = estimatedOnly
        ? { mean: r.estimatedEnergy.mean / r.runtime.mean, std: Number.NaN }
        : r.power;
      return [
        r.name,
        r.callsPerRound.toFixed(2),
        meanStdUnit(r.runtime.mean, r.runtime.std, 's'),
        meanStdUnit(energy.mean, energy.std, 'J'),
        meanStdUnit(power.mean, power.std, 'W'),
        ...utilColumns.map(([, pick]) => {
          const u = pick(r);
          return u ? meanStdUnit(u.mean, u.std, '%') : '';
        }),
      ];
    }),
  );
}

/** Three significant digits: run totals span µWh to MWh. */
const sig = (v: number) => (v === 0 ? '0' : v.toPrecision(3));

function summarySentence(report: Report): string {
  const n = roundCount(report);
  const kwh = report.summary.energy!.sum / 3.6e6;
  const head = `The application has been run ${n} time${n === 1 ? '' : 's'}.`;
  const coverage = coverageStatement(report);
  // Said where the total is not everything the host has: what was read decides.
  const covers = /not readable|estimated/.test(coverage)
    ? ` Measured energy covers what could be read: ${coverage}.`
    : '';
  if (Number.isFinite(kwh)) {
    const co2 = report.summary.co2!.sum;
    const money = report.summary.money!.sum;
    return `${head} In total, it has used ${sig(kwh)} kWh, released a total of ${sig(co2)} gCO2e into the atmosphere, and you paid ${sig(money)} ${report.priceUnit} in electricity for it.${covers}`;
  }
  const est = report.summary.estimated_energy!.sum / 3.6e6;
  if (Number.isFinite(est)) {
    const f = Number(report.config['post-processing.emissions_factor']);
    const p = Number(report.config['post-processing.price_factor']);
    return `${head} No energy was measured on this host. ESTIMATED from CPU utilisation and TDP: ${sig(est)} kWh, ${sig(est * f)} gCO2e, ${sig(est * p)} ${report.priceUnit} (an estimate, not a measurement).${covers}`;
  }
  return head;
}

/** Mean ± std across rounds of the run totals (perun's MULTI_RUN statistics). */
function acrossRounds(report: Report): string {
  const s = report.summary;
  const parts = [`runtime ${meanStdUnit(s.runtime!.mean, s.runtime!.std, 's')}`];
  if (Number.isFinite(s.energy!.mean)) {
    parts.push(
      `energy ${meanStdUnit(s.energy!.mean, s.energy!.std, 'J')}`,
      `power ${meanStdUnit(s.power!.mean, s.power!.std, 'W')}`,
    );
  }
  if (Number.isFinite(s.estimated_energy!.mean)) {
    parts.push(`estimated energy ${meanStdUnit(s.estimated_energy!.mean, s.estimated_energy!.std, 'J')}`);
  }
  return `Across ${roundCount(report)} rounds (mean ± std): ${parts.join(', ')}`;
}

/**
 * How each round's host energy was formed (host-total.ts): one line without a board sensor,
 * else the decision with its figures per round.
 */
function hostTotalLines(report: Report): string[] {
  const totals = report.rounds.flatMap((r) =>
    r.metrics.host.total ? [{ id: r.id, t: r.metrics.host.total }] : [],
  );
  if (totals.length === 0) return [];
  if (totals.every(({ t }) => t.rule === 'parts')) {
    const groups = [...new Set(totals.flatMap(({ t }) => [...t.coveredGroups, ...t.outsideGroups]))];
    return groups.length > 0 ? [`Host total: sum of the measured groups (${listInWords(groups)})`] : [];
  }
  return [
    'Host total: a board sensor stands for the groups it covers only while its energy is at least theirs; groups outside the platform are added',
    ...totals.map(({ id, t }) => `  round ${id}: ${describeHostTotal(t)}`),
  ];
}

/** perun's text report, plus what was measured how and what was not available. */
export function renderText(report: Report): string {
  const out = [
    'JOULEGATE REPORT',
    '',
    `App name: ${report.app}`,
    `Run ID: ${report.runId}`,
    `Created: ${report.created}`,
  ];
  if (report.failed) out.push(`Status: FAILED (${report.failure}); this report is partial`);
  out.push(
    `Host: ${report.host} (${report.metadata.processor ?? '?'}, ${report.metadata.core_count ?? '?'} CPUs)`,
    `Sampling period: ${report.samplingPeriod} s; rounds: ${roundCount(report)}${report.warmupRounds ? ` (+${report.warmupRounds} warm-up)` : ''}`,
    '',
    'Measured:',
  );
  if (report.sources.length === 0) out.push('  (no energy source)');
  for (const s of report.sources) out.push(`  ${s.group}: ${s.method}, ${s.detail} [${s.series.join(', ')}]`);
  out.push(`Coverage: ${coverageStatement(report)}`);
  out.push(...hostTotalLines(report));
  if (report.ranks) {
    const k = report.ranks;
    out.push(`Ranks: rank ${k.rank} of ${k.key} on this node, ${k.role}: ${k.note}`);
    for (const m of k.members)
      out.push(
        `  rank ${m.rank} (pid ${m.pid}): ${m.state}${m.exit !== undefined ? `, exit status ${m.exit}` : ''}`,
      );
    for (const n of k.notes) out.push(`  ${n}`);
  }
  if (report.unavailable.length > 0) {
    out.push('Not available:');
    for (const line of collapseDiagnostics(report.unavailable)) out.push(`  ${line}`);
  }
  const problems = report.rounds.flatMap((r) => r.metrics.problems.map((p) => `round ${r.id}: ${p}`));
  if (problems.length > 0) out.push('Problems:', ...problems.map((p) => `  ${p}`));
  out.push('', `RUN ID: ${report.runId}`, '', roundsTable(report), '');
  if (roundCount(report) > 1) out.push(acrossRounds(report), '');
  if (report.regions.length > 0) out.push('Monitored Regions', '', regionsTable(report), '');
  if (report.attribution) {
    const a = report.attribution;
    out.push('Energy Attribution (measured rounds)', '');
    if (a.groups.length > 0) out.push(markdownTable(ATTRIBUTION_HEADER, attributionRows(a)), '');
    out.push(...attributionLines(a), '');
  }
  out.push('Application Summary', '', summarySentence(report), '');
  return out.join('\n');
}
