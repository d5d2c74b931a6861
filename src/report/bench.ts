import type { Report, Stat } from '../monitor/model/report-model.js';
import { BENCH_UNIT_DEFAULTS, type BenchUnitKey } from '../monitor/model/units.js';
import { prefixFactor } from './units.js';

export interface BenchEntry {
  name: string;
  unit: string;
  value: number;
  range?: string;
}

// metric name → base unit and the [benchmarking.units] key that scales it.
const METRIC_UNITS: Record<string, { unit: string; key: '' | BenchUnitKey }> = {
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
  // A fixed unit per metric, never one picked by the value: a tracker compares the numbers of
  // one series across runs (0.9 s and 1.1 s, not 900 ms and 1.1 s).
  const prefix = spec.key
    ? (report.config[`benchmarking.units.${spec.key}`] ?? BENCH_UNIT_DEFAULTS[spec.key])
    : '';
  const f = prefixFactor(prefix);
  const unit = metric === 'money' ? report.priceUnit : `${prefix}${spec.unit}`;
  const e: BenchEntry = { name: `${name} - ${metric.toUpperCase()}`, unit, value: s.mean / f };
  // No range for a single value: its std is NaN (platform/statistics.ts), not a spread of 0.
  if (withRange && Number.isFinite(s.std)) e.range = String(s.std / f);
  return [e];
}

const listOf = (s: string | undefined) => (s ?? '').split(/\s*,\s*/).filter(Boolean);

/**
 * github-action-benchmark's customSmallerIsBetter list: run metrics, then region metrics. Series
 * names stay the same from run to run (`<app> - ENERGY`, `<app>:<region> - RUNTIME`; no run id),
 * so a tracker draws one line per metric.
 */
export function renderBench(report: Report): string {
  const base = report.app;
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
          `${report.app}:${r.name}`,
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
