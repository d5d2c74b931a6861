import type { Diagnostic } from '../platform/backend.js';
import type { RegionSummary, RoundMetrics, Stat } from './metrics.js';
import type { RegionEvent } from './regions-pairing.js';
import type { AppExit } from './run-app.js';
import type { DeviceGroup, EnergyMethod, SeriesSpec } from './signals.js';

/** How one device group was measured, for the "measured how" part of every report. */
export interface SourceInfo {
  group: DeviceGroup;
  method: EnergyMethod;
  series: string[];
  detail: string;
  /** For estimates: watts per unit of the series (full-load watts for a 0..1 utilisation). */
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
