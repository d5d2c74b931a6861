import type { AttributionReport } from '../attribution/summary.js';
import type { Diagnostic } from '../platform/backend.js';
import type { RegionSummary, RoundMetrics, Stat } from './metrics.js';
import type { RegionEvent } from './regions-pairing.js';
import type { AppExit } from './run-app.js';
import {
  DEVICE_GROUPS,
  type DeviceGroup,
  type EnergyMethod,
  SAMPLE_UNITS,
  type SeriesKind,
  type SeriesSpec,
} from './signals.js';

/** How one device group was measured, for the "measured how" part of every report. */
export interface SourceInfo {
  group: DeviceGroup;
  method: EnergyMethod;
  series: string[];
  detail: string;
  /** For estimates: watts per unit of the series (W per % of utilisation). */
  wattsPerUnit?: number;
}

export interface RoundReport {
  id: string;
  exit: AppExit;
  /** Sampling deadlines missed because a read took longer than the period. */
  overruns: number;
  /** Seconds since the round's origin (the app start), one per sample. */
  times: number[];
  /** One array per series (same order as Report.series); NaN = failed read. */
  values: number[][];
  events: RegionEvent[];
  metrics: RoundMetrics;
}

/**
 * Everything one `joulegate monitor` invocation measured: perun's MULTI_RUN (this object) with
 * its RUNs (`rounds`), one host. All writers render it; json/hdf5 store it; export re-reads it.
 */
export interface Report {
  kind: 'joulegate-report';
  version: 1;
  app: string;
  runId: string;
  /** True when the app failed or was interrupted: the report is partial. */
  failed: boolean;
  failure: string;
  created: string;
  host: string;
  metadata: Record<string, string>;
  config: Record<string, string>;
  samplingPeriod: number;
  priceUnit: string;
  /** The unit of every number in the report (absent in older reports). */
  units?: ReportUnits;
  series: SeriesSpec[];
  sources: SourceInfo[];
  /** What could not be measured, and why. */
  unavailable: Diagnostic[];
  warmupRounds: number;
  rounds: RoundReport[];
  /**
   * Rounds left out of `rounds` to bound memory and file size (see round-stats.ts); they count
   * in `summary` and `regions`. Absent when every round is kept.
   */
  omittedRounds?: number;
  /** Statistics across rounds of the host metrics. */
  summary: Record<string, Stat>;
  regions: RegionSummary[];
  /** `monitor --attribute`: the app's share of the node's energy over the measured rounds. */
  attribution?: AttributionReport;
}

/** Rounds the report's statistics cover: those kept whole and those left out. */
export function roundCount(r: Report): number {
  return r.rounds.length + (r.omittedRounds ?? 0);
}

/** File name stem: perun's `<app>_<run id>`, `failed_` in front of a failed run. */
export function reportStem(r: Report): string {
  const app = r.app.replace(/[^\w.-]/g, '_');
  return `${r.failed ? 'failed_' : ''}${app}_${r.runId.replace(/[^\w.-]/g, '_')}`;
}

/**
 * The units table every report carries: one unit per field name (a name means the same unit
 * wherever it appears: in rounds, groups, region calls, the summary and its mean/std/min/max/
 * sum) and one per series kind for the raw samples. Conventions: ratios are percent (0..100,
 * utilisation and coverage alike, never a fraction); CO2 is grams of CO2-equivalent (`g`);
 * money is in `priceUnit`; counts have the unit ''.
 */
export interface ReportUnits {
  fields: Record<string, string>;
  samples: Record<SeriesKind, string>;
}

export function reportUnits(priceUnit: string): ReportUnits {
  const fields: Record<string, string> = {};
  const set = (unit: string, names: string[]) => {
    for (const n of names) fields[n] = unit;
  };
  set('s', ['samplingPeriod', 'times', 't', 'start', 'stop', 'runtime', 'missingSeconds']);
  set('J', ['energy', 'estimatedEnergy', 'estimated_energy', 'facilityEnergy', 'groupEnergy']);
  set('J', ['boardEnergy', 'coveredEnergy', 'outsideEnergy']);
  set('J', ['measured', 'app', 'consumers', 'others', 'unattributed', 'idle']);
  set('W', ['power', 'estimatedPower']);
  set('W/%', ['wattsPerUnit']);
  set('%', ['util', 'cpuUtil', 'gpuUtil', 'coverage']);
  set('B', ['memory', 'readBytes', 'writeBytes']);
  set('g', ['co2']);
  set(priceUnit, ['money']);
  set('', ['overruns', 'warmupRounds', 'callsPerRound', 'depth', 'status', 'code', 'missingIntervals']);
  return { fields, samples: { ...SAMPLE_UNITS } };
}

/** Groups that have an energy or power series, in report order. */
function energyGroupsOf(series: readonly SeriesSpec[]): DeviceGroup[] {
  const groups = new Set(series.filter((s) => s.kind === 'energy' || s.kind === 'power').map((s) => s.group));
  return DEVICE_GROUPS.filter((g) => groups.has(g));
}

/** `a`, `a and b`, `a, b and c`. */
export function listInWords(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
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
