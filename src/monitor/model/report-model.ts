/**
 * The report model: what one `joulegate monitor` invocation measured, as the writers render it,
 * json/hdf5 store it and export reads it back. Types only; what is derived from them lives in
 * the small modules beside this one (units.ts, report-facts.ts, host-total.ts,
 * regions-pairing.ts, round-stats.ts). Report and cluster import monitor through this folder only.
 */
import type { AttributionReport } from '../../attribution/summary.js';
import type { Diagnostic } from '../../platform/backend.js';
import type { DeviceGroup, EnergyMethod, SeriesKind, SeriesSpec } from '../../platform/signal-catalogue.js';
import type { Summary } from '../../platform/statistics.js';

/** How one device group was measured, for the "measured how" part of every report. */
export interface SourceInfo {
  group: DeviceGroup;
  method: EnergyMethod;
  series: string[];
  detail: string;
  /** For estimates: watts per unit of the series (W per % of utilisation). */
  wattsPerUnit?: number;
}

/** How the app of one round ended. */
export interface AppExit {
  /** The status the monitor passes on: the app's code, or 128 + signal number. */
  status: number;
  code: number;
  signal: string;
}

/** One region start or stop as the app reported it, on the shared clock (s since run origin). */
export interface RegionEvent {
  name: string;
  kind: 'start' | 'stop';
  t: number;
  /** Identifies one call: its stop pairs with its start whatever else is open (threads). */
  call?: string;
}

/** One call of a region. */
export interface RegionCall {
  name: string;
  start: number;
  stop: number;
  /** Nesting depth when it started (0 = outermost). */
  depth: number;
  /** Never stopped by the app (crash, interrupt): closed at the end of the run. */
  open: boolean;
}

/** Statistics of one quantity across rounds or calls (platform/statistics.ts's rule). */
export type Stat = Pick<Summary, 'mean' | 'std' | 'min' | 'max' | 'sum'>;

/** How the host total was formed (host-total.ts): `parts` = no board sensor, the sum of the groups. */
export type HostRule = 'parts' | 'board' | 'board-not-plausible';

/** The decision and its figures, kept in every report (joules; NaN where there is no such part). */
export interface HostTotal {
  rule: HostRule;
  /** The board/platform sensor's energy. */
  boardEnergy: number;
  /** The groups the board sensor covers, and their energy. */
  coveredGroups: DeviceGroup[];
  coveredEnergy: number;
  /** The groups outside the platform (always added), and their energy. */
  outsideGroups: DeviceGroup[];
  outsideEnergy: number;
}

export interface GroupMetrics {
  /** Joules; NaN when the group has no energy or power source. */
  energy: number;
  /** Time-weighted mean watts. */
  power: number;
  method?: EnergyMethod;
  /** Percent of the run the energy covers (power gaps leave holes; counters do not). */
  coverage?: number;
  /** Mean utilisation, percent. */
  util?: number;
  /** Mean bytes in use (summed over devices). */
  memory?: number;
  readBytes?: number;
  writeBytes?: number;
}

export interface HostMetrics {
  runtime: number;
  /**
   * Measured joules of the host by the host total rule (host-total.ts) + power_overhead ×
   * runtime; NaN when nothing was measured.
   */
  energy: number;
  power: number;
  /** Joules from estimates only (never added to `energy`); NaN when none. */
  estimatedEnergy: number;
  estimatedPower: number;
  /** `energy` × PUE: the run total perun calls ENERGY of the RUN. */
  facilityEnergy: number;
  co2: number;
  money: number;
  groups: Partial<Record<DeviceGroup, GroupMetrics>>;
  /** How `energy` was formed from the groups, with the figures (absent in older reports). */
  total?: HostTotal;
}

export interface RegionCallMetrics extends RegionCall {
  runtime: number;
  energy: number;
  power: number;
  estimatedEnergy: number;
  groupEnergy: Partial<Record<DeviceGroup, number>>;
  /** Mean CPU / GPU utilisation during the call, percent; NaN where not sampled (absent in
   * reports written before it was measured). */
  cpuUtil?: number;
  gpuUtil?: number;
}

export interface RoundMetrics {
  host: HostMetrics;
  regions: RegionCallMetrics[];
  /** Counter anomalies and region pairing problems. */
  problems: string[];
}

export interface RegionSummary {
  name: string;
  callsPerRound: number;
  runtime: Stat;
  energy: Stat;
  power: Stat;
  estimatedEnergy: Stat;
  /** Percent; absent in reports written before it was measured. */
  cpuUtil?: Stat;
  gpuUtil?: Stat;
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
 * The unit of every number in a report (units.ts fills it): one unit per field name (a name
 * means the same unit wherever it appears) and one per series kind for the raw samples.
 */
export interface ReportUnits {
  fields: Record<string, string>;
  samples: Record<SeriesKind, string>;
}

/**
 * Everything one `joulegate monitor` invocation measured: perun's MULTI_RUN (this object) with
 * its RUNs (`rounds`), one host. All writers render it; json/hdf5 store it; export re-reads it.
 */
/** Another monitor of the same job on this node, as the sampler saw it. */
export interface RankMember {
  rank: string;
  pid: number;
  state: string;
  /** Its app's exit status, when it finished. */
  exit?: number;
}

/** Several monitors of one job on one node (monitor/ranks.ts): which one measured the node. */
export interface RanksInfo {
  /** The job key the ranks share, and the environment it came from. */
  key: string;
  source: string;
  rank: string;
  role: 'sampler' | 'contributor';
  sampler: { rank: string; pid: number };
  /** The sampler's report: the other ranks. */
  members: RankMember[];
  note: string;
  notes: string[];
}

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
   * Rounds left out of `rounds` to bound memory and file size (monitor/round-collector.ts); they
   * count in `summary` and `regions`. Absent when every round is kept.
   */
  omittedRounds?: number;
  /** Statistics across rounds of the host metrics. */
  summary: Record<string, Stat>;
  regions: RegionSummary[];
  /** `monitor --attribute`: the app's share of the node's energy over the measured rounds. */
  attribution?: AttributionReport;
  /** Run as one of several ranks of a job on this node: who measured the node (counted once). */
  ranks?: RanksInfo;
}
