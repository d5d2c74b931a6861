import { requestFailure } from '../../backends/unavailable.js';
import { domainName } from '../../platform/domains.js';
import { errorMessage } from '../../platform/errors.js';
import type { PlatformIO } from '../../platform/platform-io.js';
import { processExists } from '../../platform/process.js';
import { type LoopClock, realClock, runTimedLoop } from './loop.js';
import { reportCsv, reportYaml, type SessionReport, SessionStats, wallClockNow } from './report.js';
import { checkRequestIndices, parseRequests, type ReadRequest, RequestError } from './requests.js';
import { formatRow, headerRow, metricName } from './trace.js';

export type ReportFormat = 'yaml' | 'csv';

/** The session's settings after option parsing (geopmsession's options). */
export interface SessionConfig {
  time: number;
  period: number;
  pid?: number;
  printHeader: boolean;
  delimiter: string;
  reportFormat: ReportFormat;
  reportSamples?: number;
}

/** Where output goes; an absent sink means that output is off (`/dev/null` or no -r). */
export interface SessionSinks {
  trace?: (text: string) => void;
  report?: (text: string) => void;
}

export interface SessionDeps {
  pio: PlatformIO;
  /** Request lines, already cut at the first empty line. */
  requestLines: readonly string[];
  sinks: SessionSinks;
  host: string;
  clock?: LoopClock;
  /** Aborted by SIGINT/SIGTERM: sampling stops, the report is still written. */
  signal?: AbortSignal;
  isAlive?: (pid: number) => boolean;
  /** One line for the user (stderr): what a request left out and why. */
  warn?: (line: string) => void;
  wallClock?: () => string;
}

/** GEOPM re-reads after this pause when a first sample is NaN (rate signals need two reads). */
export const STARTUP_SLEEP_S = 0.005;

/** geopmsession's run-time checks, in its order and wording. */
export function checkReadArgs(config: SessionConfig): void {
  const { time, period, reportSamples, pid } = config;
  const untilPidEnds = pid !== undefined && time === 0;
  if (period > time && !untilPidEnds)
    throw new RequestError('Specified a period that is greater than the total run time');
  if (period > 86400) throw new RequestError('Specified a period greater than 24 hours');
  if (period < 0 || time < 0) throw new RequestError('Specified a negative run time or period');
  if (reportSamples !== undefined && reportSamples < 0)
    throw new RequestError('Specified report samples is negative');
  // GEOPM divides by it; zero would never report, so it is an error here.
  if (reportSamples === 0) throw new RequestError('Specified report samples is zero');
}

/**
 * Number of periods after the first sample: ceil(time / period); none for a zero period;
 * unbounded when following a pid without a time limit.
 */
export function periodCount(config: SessionConfig): number | undefined {
  if (config.period === 0) return 0;
  if (config.pid !== undefined && config.time === 0) return undefined;
  return Math.ceil(config.time / config.period);
}

/** Writes successive reports: YAML documents separated by `---`, CSV with one header row. */
function reportWriter(config: SessionConfig, sink: (text: string) => void): (r: SessionReport) => void {
  let first = true;
  return (r) => {
    if (config.reportFormat === 'yaml') sink(`${first ? '' : '\n---\n\n'}${reportYaml(r)}`);
    else sink(reportCsv(r, config.delimiter, config.printHeader && first));
    first = false;
  };
}

function pushAll(pio: PlatformIO, requests: readonly ReadRequest[]): number[] {
  return requests.map(({ name, domain, idx }) => {
    try {
      return pio.pushSignal(name, domain, idx);
    } catch (err) {
      throw new RequestError(
        `Unable to push "${name} ${domainName(domain)} ${idx}". Reason: ${errorMessage(err)}`,
      );
    }
  });
}

/** Runs one read session; returns the number of samples taken. */
export async function runSession(config: SessionConfig, deps: SessionDeps): Promise<number> {
  const { pio, sinks } = deps;
  const clock = deps.clock ?? realClock;
  const isAlive = deps.isAlive ?? processExists;
  // A name this node does not serve fails with why, where joulegate knows (no RAPL, no msr).
  const describe = (name: string) => {
    try {
      return pio.signalInfo(name);
    } catch (err) {
      throw new RequestError(requestFailure(pio, 'signal', name, err));
    }
  };
  const ctx = {
    numDomain: (d: Parameters<typeof pio.topology.numDomain>[0]) => pio.topology.numDomain(d),
    nativeDomain: (name: string) => describe(name).domain,
    whyUnavailable: pio.whyUnavailable.bind(pio),
    leftOut: (note: string) => deps.warn?.(`left out: ${note}`),
  };
  const requests = parseRequests(deps.requestLines, ctx);
  const formats = requests.map((r) => describe(r.name).format);
  checkReadArgs(config);
  checkRequestIndices(requests, ctx);
  const handles = pushAll(pio, requests);

  if (sinks.trace && config.printHeader) sinks.trace(headerRow(requests, config.delimiter));
  const stats = sinks.report ? new SessionStats(requests.map(metricName), deps.host) : undefined;
  const writeReport = sinks.report ? reportWriter(config, sinks.report) : undefined;
  const flushReport = () => {
    if (stats && writeReport && stats.updateCount > 0) writeReport(stats.report());
  };

  const sampleAll = () => handles.map((h) => pio.sample(h));
  try {
    await pio.readBatch();
    if (sampleAll().some(Number.isNaN)) {
      await clock.sleep(STARTUP_SLEEP_S, deps.signal);
      await pio.readBatch();
    }
    return await runTimedLoop(
      { period: config.period, numPeriod: periodCount(config), clock, signal: deps.signal },
      async (idx) => {
        if (idx !== 0) await pio.readBatch();
        const values = sampleAll();
        sinks.trace?.(formatRow(values, formats, config.delimiter));
        stats?.update(clock.now(), values, deps.wallClock ?? wallClockNow);
        if (config.pid !== undefined && !isAlive(config.pid)) return false;
        const every = config.reportSamples;
        if (every !== undefined && idx !== 0 && idx % every === 0) {
          flushReport();
          stats?.reset();
        }
        return true;
      },
    );
  } finally {
    flushReport();
  }
}
