import { formatG } from '../../platform/format.js';
import { RunningStats, type Summary } from '../../platform/statistics.js';

/** Summary of one metric over the samples since the last reset (platform/statistics.ts's rule). */
export type MetricStats = { name: string } & Omit<Summary, 'sum'>;

/** geopmsession's report: sampling times plus per-metric statistics. */
export interface SessionReport {
  host: string;
  /** Wall-clock time of the first sample, ISO-8601 with nanoseconds and UTC offset. */
  sampleTimeFirst: string;
  sampleTimeTotal: number;
  sampleCount: number;
  samplePeriodMean: number;
  samplePeriodStd: number;
  metrics: MetricStats[];
}

function metricStats(name: string, stats: RunningStats): MetricStats {
  const { count, first, last, min, max, mean, std } = stats.summary();
  return { name, count, first, last, min, max, mean, std };
}

/**
 * Accumulates session samples for reports (GEOPM's StatsCollector). Sample times are seconds on
 * a monotonic clock; the wall-clock time of the first sample is taken when it arrives.
 */
export class SessionStats {
  private metrics: RunningStats[] = [];
  private periods = new RunningStats();
  private timeFirst = Number.NaN;
  private timeLast = Number.NaN;
  private wallFirst = '';
  private updates = 0;

  constructor(
    private readonly names: readonly string[],
    private readonly host: string,
  ) {
    this.reset();
  }

  reset(): void {
    this.metrics = this.names.map(() => new RunningStats());
    this.periods = new RunningStats();
    this.timeFirst = Number.NaN;
    this.timeLast = Number.NaN;
    this.wallFirst = '';
    this.updates = 0;
  }

  get updateCount(): number {
    return this.updates;
  }

  /** Adds one sample taken at `time` (monotonic seconds); `wallClock` is called for the first. */
  update(time: number, values: readonly number[], wallClock: () => string): void {
    if (values.length !== this.names.length) {
      throw new RangeError(`expected ${this.names.length} values, got ${values.length}`);
    }
    if (this.updates === 0) {
      this.timeFirst = time;
      this.wallFirst = wallClock();
    } else {
      this.periods.add(time - this.timeLast);
    }
    this.timeLast = time;
    this.updates++;
    for (const [i, v] of values.entries()) this.metrics[i]!.add(v);
  }

  report(): SessionReport {
    const periods = this.periods.summary();
    return {
      host: this.host,
      sampleTimeFirst: this.wallFirst,
      sampleTimeTotal: this.updates === 0 ? 0 : this.timeLast - this.timeFirst,
      sampleCount: this.updates,
      // GEOPM reports 0 (not NaN) until there are enough samples to measure periods.
      samplePeriodMean: periods.count >= 1 ? periods.mean : 0,
      samplePeriodStd: periods.count >= 2 ? periods.std : 0,
      metrics: this.metrics.map((m, i) => metricStats(this.names[i]!, m)),
    };
  }
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * ISO-8601 local time with nanoseconds and numeric UTC offset, as GEOPM writes
 * sample-time-first: `2024-08-14T18:23:58.545153099-0700`.
 */
export function isoTimestamp(epochNs: bigint, offsetMinutes: number): string {
  const ms = Number(epochNs / 1_000_000n);
  const nanos = Number(((epochNs % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n);
  const local = new Date(ms + offsetMinutes * 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return (
    `${local.getUTCFullYear()}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}` +
    `T${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}` +
    `.${pad(nanos, 9)}${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`
  );
}

/** Now, on the wall clock, in the form isoTimestamp gives (local zone of this process). */
export function wallClockNow(): string {
  const ms = performance.timeOrigin + performance.now();
  const epochNs = BigInt(Math.round(ms * 1e6));
  return isoTimestamp(epochNs, -new Date(ms).getTimezoneOffset());
}

/** Python's repr of a float (the CSV report is written by Python in GEOPM): 2.0, 1e-05, nan. */
export function pythonFloat(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  const [mantissa, expText] = v.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) {
    const sign = exp < 0 ? '-' : '+';
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (Object.is(v, -0)) return '-0.0';
  const fixed = String(v);
  return Number.isInteger(v) ? `${fixed}.0` : fixed;
}

const STAT_KEYS = ['count', 'first', 'last', 'min', 'max', 'mean', 'std'] as const;

/** The YAML report; numbers as C++ streams print doubles (%g, 6 significant digits). */
export function reportYaml(r: SessionReport): string {
  const lines = [
    `host: "${r.host}"`,
    `sample-time-first: "${r.sampleTimeFirst}"`,
    `sample-time-total: ${formatG(r.sampleTimeTotal)}`,
    `sample-count: ${r.sampleCount}`,
    `sample-period-mean: ${formatG(r.samplePeriodMean)}`,
    `sample-period-std: ${formatG(r.samplePeriodStd)}`,
    'metrics:',
  ];
  for (const m of r.metrics) {
    lines.push(`  ${m.name}:`);
    for (const key of STAT_KEYS) lines.push(`    ${key}: ${key === 'count' ? m.count : formatG(m[key])}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The CSV report: optional quoted header row, then one data row; metrics sorted by name. */
export function reportCsv(r: SessionReport, delimiter: string, printHeader: boolean): string {
  const header = [
    'host',
    'sample-time-first',
    'sample-time-total',
    'sample-count',
    'sample-period-mean',
    'sample-period-std',
  ];
  const data = [
    `"${r.host}"`,
    `"${r.sampleTimeFirst}"`,
    pythonFloat(r.sampleTimeTotal),
    String(r.sampleCount),
    pythonFloat(r.samplePeriodMean),
    pythonFloat(r.samplePeriodStd),
  ];
  const sorted = [...r.metrics].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const m of sorted) {
    for (const key of STAT_KEYS) {
      header.push(`${m.name}-${key}`);
      data.push(key === 'count' ? String(m.count) : pythonFloat(m[key]));
    }
  }
  const rows = printHeader ? [header.map((h) => `"${h}"`).join(delimiter)] : [];
  rows.push(data.join(delimiter));
  return `${rows.join('\n')}\n`;
}
