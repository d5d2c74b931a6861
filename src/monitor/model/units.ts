import type { SeriesKind } from '../../platform/signal-catalogue.js';
import type { ReportUnits } from './report-model.js';

/** Unit symbol of a series' stored values (perun's Unit symbols). */
export const SAMPLE_UNITS: Readonly<Record<SeriesKind, string>> = {
  energy: 'J',
  power: 'W',
  util: '%',
  memory: 'B',
  bytes: 'B',
};

export function seriesUnit(kind: SeriesKind): string {
  return SAMPLE_UNITS[kind];
}

/**
 * The metric prefix of each `[benchmarking.units]` key when the configuration sets none. The
 * configuration schema takes its defaults from here, and the bench writer falls back to them
 * for a report that does not carry the key (one read back from a perun file).
 */
export const BENCH_UNIT_DEFAULTS = { joule: 'k', second: '', percent: '', watt: '', byte: 'G' } as const;
export type BenchUnitKey = keyof typeof BENCH_UNIT_DEFAULTS;

/**
 * The units table every report carries: one unit per field name (a name means the same unit
 * wherever it appears: in rounds, groups, region calls, the summary and its mean/std/min/max/
 * sum) and one per series kind for the raw samples. Conventions: ratios are percent (0..100,
 * utilisation and coverage alike, never a fraction); CO2 is grams of CO2-equivalent (`g`);
 * money is in `priceUnit`; counts have the unit ''.
 */
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
