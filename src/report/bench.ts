import type { Stat } from '../monitor/metrics.js';
import type { Report } from '../monitor/report-model.js';
import { autoPrefix, prefixFactor } from './units.js';

export interface BenchEntry {
  name: string;
  unit: string;
  value: number;
  range?: string;
}

// metric name → base unit and the [benchmarking.units] key that scales it.
const METRIC_UNITS: Record<string, { unit: string; key: string }> = {
  runtime: { unit: 's', key: 'second' },
  energy: { unit: 'J', key: 'joule' },
  app_energy: { unit: 'J', key: 'joule' },
  estimated_energy: { unit: 'J', key: 'joule' },
  power: { unit: 'W', key: 'watt' },
  co2: { unit: 'g', key: '' },
  money: { unit: '', key: '' },
};

function entry(
  report: Report,
  name: string,
  metric: string,
  s: Stat | undefined,
  withRange: boolean,
): BenchEntry[] {
  const spec = METRIC_UNITS[metric];
  if (!spec || !s || !Number.isFinite(s.mean)) return [];
  const configured = spec.key ? report.config[`benchmarking.units.${spec.key}`] : undefined;
  const prefix = configured !== undefined && configured !== '' ? configured : autoPrefix(s.mean);
  const f = prefixFactor(prefix);
  const unit = metric === 'money' ? report.priceUnit : `${prefix}${spec.unit}`;
  const e: BenchEntry = { name: `${name} - ${metric.toUpperCase()}`, unit, value: s.mean / f };
  // No range for a single value: its std is NaN (platform/statistics.ts), not a spread of 0.
  if (withRange && Number.isFinite(s.std)) e.range = String(s.std / f);
  return [e];
}

const listOf = (s: string | undefined) => (s ?? '').split(/\s*,\s*/).filter(Boolean);

/** github-action-benchmark's customSmallerIsBetter list: run metrics, then region metrics. */
export function renderBench(report: Report): string {
  const base = `${report.app}_${report.runId}`;
  const many = report.rounds.length > 1;
  const out: BenchEntry[] = [];
  for (const m of listOf(report.config['benchmarking.metrics']))
    out.push(...entry(report, base, m, report.summary[m], many));
  for (const r of report.regions) {
    for (const m of listOf(report.config['benchmarking.region_metrics'])) {
      const s = m === 'runtime' ? r.runtime : m === 'energy' ? r.energy : m === 'power' ? r.power : undefined;
      out.push(
        ...entry(
          report,
          `${r.name}_${report.runId}`,
          m,
          s,
          r.runtime.sum > 0 && r.callsPerRound * report.rounds.length > 1,
        ),
      );
    }
  }
  if (report.attribution) {
    // The app's own share per measured round: what it cost on a shared node, without its neighbours.
    const rounds = Math.max(1, report.rounds.length + (report.omittedRounds ?? 0));
    const app = report.attribution.groups.reduce((sum, g) => sum + g.app, 0) / rounds;
    out.push(
      ...entry(
        report,
        base,
        'app_energy',
        { mean: app, std: Number.NaN, min: app, max: app, sum: app },
        false,
      ),
    );
  }
  return `${JSON.stringify(out, null, 2)}\n`;
}
