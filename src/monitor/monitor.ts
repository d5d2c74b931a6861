import { constants } from 'node:os';
import { type AttributionSetup, RunAttribution } from '../attribution/run.js';
import { registeredBackends } from '../backends/registry.js';
import { cpuEstimator } from '../platform/cpu-estimate.js';
import { errorMessage } from '../platform/errors.js';
import { HeapKeeper, preferSmallFootprint } from '../platform/heap.js';
import type { PlatformIO } from '../platform/platform-io.js';
import type { SampleSet } from '../platform/sample-set.js';
import { appCommand, appNameOf } from './app-command.js';
import { describeSources, notAvailable } from './availability.js';
import { clockMs } from './clock.js';
import { flattenConfig, regexesOf } from './config/load.js';
import type { Config } from './config/schema.js';
import { type Logger, SILENT } from './log.js';
import { collectMetadata, hostCpus } from './metadata.js';
import { roundMetrics } from './metrics.js';
import type { RankMember, RegionEvent, Report, RoundMetrics } from './model/report-model.js';
import { collapseDiagnostics } from './model/unavailable.js';
import { reportUnits } from './model/units.js';
import { clearingProgress, ProgressLine } from './progress.js';
import { type DoneRecord, NodeRanks, rankIdentity } from './ranks.js';
import { KEPT_ROUNDS, KEPT_SAMPLE_VALUES, RoundCollector } from './round-collector.js';
import { type AppRun, runApp } from './run-app.js';
import { Sampler, SamplingLoop } from './sampler.js';
import { checkFilters, selectSeries } from './signals.js';

export interface MonitorOptions {
  command: string[];
  config: Config;
  pio: PlatformIO;
  /** Where the live status line goes (a TTY), or undefined for none. */
  progress?: NodeJS.WriteStream;
  /** Diagnostics (`[debug]` settings); none by default. */
  log?: Logger;
  /** perun's `-b/--binary`: start the command as given (a `.py` file too). */
  binary?: boolean;
  /** `--attribute`: report the app's share of the node's energy (docs/attribution.md). */
  attribution?: AttributionSetup;
  /** Where the launcher's rank variables are read (ranks.ts); the process's own by default. */
  env?: NodeJS.ProcessEnv;
}

export interface MonitorResult {
  report: Report;
  /** The app's exit status to pass on (128 + signal for a killed app). */
  status: number;
}

const INTERRUPTS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** This monitor's part among the job's ranks on this node; undefined outside a parallel launch. */
function joinNodeRanks(env: NodeJS.ProcessEnv, log: Logger): NodeRanks | undefined {
  const id = rankIdentity(env);
  if (!id) return undefined;
  try {
    return NodeRanks.join(id);
  } catch (err) {
    log.warning(`rank ${id.rank} of ${id.key}: ${errorMessage(err)}; measuring the node alone`);
    return undefined;
  }
}

/**
 * The sampler's app run widened to the node's ranks: it ends when the last rank's app ended,
 * and holds every rank's region events, named `rank <r>/<name>` (times on the shared clock,
 * relative to `originMs` like its own).
 */
function withOtherRanks(app: AppRun, rank: string, done: readonly DoneRecord[], originMs: number): AppRun {
  if (done.length === 0) return app;
  const named = (r: string, events: readonly RegionEvent[], toRel: (t: number) => number) =>
    events.map((e) => ({
      ...e,
      name: `rank ${r}/${e.name}`,
      t: toRel(e.t),
      ...(e.call ? { call: `rank ${r}/${e.call}` } : {}),
    }));
  const events = [
    ...named(rank, app.events, (t) => t),
    ...done.flatMap((d) => named(d.rank, d.events, (t) => (t - originMs) / 1000)),
  ].sort((a, b) => a.t - b.t);
  return { ...app, stopMs: Math.max(app.stopMs, ...done.map((d) => d.stopMs)), events };
}

/**
 * `joulegate monitor`: runs the app for the warm-up and measured rounds while sampling, and
 * builds the report. Stops after the first failed or interrupted round; that report is partial
 * and marked failed.
 */
export async function runMonitor(opts: MonitorOptions): Promise<MonitorResult> {
  const { config, pio } = opts;
  // perun's -b/--binary: the command is started as given, never as a script of an interpreter.
  const command = opts.binary ? [...opts.command] : appCommand(opts.command);
  // The run's id and creation time are its start, not the moment the report is written.
  const started = new Date();
  // The status line of the round running, cleared before any log line (see clearingProgress).
  let progress: ProgressLine | undefined;
  const log = clearingProgress(opts.log ?? SILENT, () => progress);
  const filters = {
    includeSensors: regexesOf(config.monitor.include_sensors),
    excludeSensors: regexesOf(config.monitor.exclude_sensors),
    includeBackends: regexesOf(config.monitor.include_backends),
    excludeBackends: regexesOf(config.monitor.exclude_backends),
  };
  const selection = selectSeries(pio, filters);
  // perun's names select the same; a typo, or filters that leave nothing, end here (no app run).
  const backendNames = registeredBackends().map((b) => b.name);
  for (const w of checkFilters(pio, filters, selection, backendNames)) log.warning(w);
  const node = joinNodeRanks(opts.env ?? process.env, log);
  // One monitor per node samples it; the other ranks of the job only run their app (ranks.ts).
  const series = node?.role === 'contributor' ? [] : selection.series;
  if (node?.role === 'contributor')
    log.info(
      `rank ${node.id.rank}: the node is sampled by rank ${node.sampler.rank} (pid ${node.sampler.pid})`,
    );
  const sampler = new Sampler(pio, series, (id, reason) =>
    log.warning(`${id}: read failed (${reason}); its samples are gaps until it reads again`),
  );
  log.info(
    `sampling ${series.length} series from ${[...new Set(series.map((s) => s.backend))].join(', ')} ` +
      `every ${config.monitor.sampling_period} s`,
  );
  if (log.enabled('DEBUG'))
    for (const s of series)
      log.debug(`series ${s.id}: ${s.signal} ${s.domain} ${s.index} (${s.backend}, ${s.group} ${s.kind})`);
  for (const line of collapseDiagnostics(pio.diagnostics())) log.info(`not available: ${line}`);
  const cpus = hostCpus(pio);
  const estimator = cpuEstimator(
    { tdp: config.monitor.estimate_tdp, threads: config.monitor.estimate_threads },
    cpus.model,
    cpus.count,
  );
  const post = {
    powerOverhead: config['post-processing'].power_overhead,
    pue: config['post-processing'].pue,
    emissionsFactor: config['post-processing'].emissions_factor,
    priceFactor: config['post-processing'].price_factor,
  };
  const periodMs = config.monitor.sampling_period * 1000;
  const attribution = opts.attribution && new RunAttribution(opts.attribution, series, pio, estimator);
  const rounds = new RoundCollector();
  let interrupted: NodeJS.Signals | undefined;
  let members: RankMember[] = [];
  let status = 0;
  let failure = '';
  const total = config.benchmarking.warmup_rounds + config.benchmarking.rounds;
  // Between rounds there is no app to forward a signal to: note it, finish, write the report.
  const noteInterrupt = (sig: NodeJS.Signals) => {
    interrupted ??= sig;
  };
  for (const sig of INTERRUPTS) process.on(sig, noteInterrupt);
  preferSmallFootprint();
  const heap = new HeapKeeper();
  try {
    for (let r = 0; r < total && interrupted === undefined; r++) {
      heap.betweenRounds();
      const warmup = r < config.benchmarking.warmup_rounds;
      log.info(`round ${r + 1} of ${total}${warmup ? ' (warm-up)' : ''}: starting ${command.join(' ')}`);
      const data: SampleSet = { originMs: clockMs(), times: [], values: series.map(() => []) };
      const line = opts.progress
        ? new ProgressLine(series, opts.progress, {
            fullLoadWatts: estimator?.fullLoadWatts,
            powerOverhead: post.powerOverhead,
          })
        : undefined;
      progress = line;
      // What an interrupt did, for the user: on its own line, not after the progress line.
      const announce = (text: string) => {
        line?.clear();
        process.stderr.write(`joulegate: ${text}\n`);
      };
      const meter = attribution?.roundMeter(warmup);
      const reader =
        attribution && meter ? attribution.reader(sampler, meter, (w) => log.warning(w)) : sampler;
      const loop = new SamplingLoop(reader, data, periodMs, line ? () => line.update(data) : undefined);
      await loop.start();
      let app: Awaited<ReturnType<typeof runApp>>;
      try {
        app = await runApp(command, data.originMs, {
          onInterrupt: (sig) => {
            interrupted ??= sig;
          },
          announce,
          onSpawn: attribution && meter ? (pid) => attribution.addApp(meter, pid) : undefined,
        });
        const last = r === total - 1 || interrupted !== undefined || app.exit.status !== 0;
        if (node && last) {
          if (node.role === 'sampler') {
            log.info(`rank ${node.id.rank}: sampling the node until the job's other ranks on it are done`);
            const others = await node.waitForOthers(() => interrupted !== undefined);
            members = others.members;
            app = withOtherRanks(app, node.id.rank, others.done, data.originMs);
          } else
            node.finish({
              startMs: app.startMs,
              stopMs: app.stopMs,
              exit: app.exit,
              events: app.events.map((e) => ({ ...e, t: data.originMs + e.t * 1000 })),
            });
        }
      } finally {
        await loop.stop();
        line?.clear();
        progress = undefined;
      }
      status = app.exit.status;
      // An app that handles the interrupt and exits normally still ends an interrupted run.
      if (interrupted !== undefined && !app.exit.signal) status = 128 + (constants.signals[interrupted] ?? 0);
      // Times relative to the app start: the first sample sits just before 0.
      const shift = (app.startMs - data.originMs) / 1000;
      data.times = data.times.map((t) => t - shift);
      data.originMs = app.startMs;
      const events = app.events.map((e) => ({ ...e, t: e.t - shift }));
      const runtime = (app.stopMs - app.startMs) / 1000;
      const failedRound = interrupted !== undefined || status !== 0;
      if (failedRound) {
        failure = interrupted
          ? `interrupted by ${interrupted}`
          : app.exit.signal
            ? `app killed by ${app.exit.signal}`
            : `app exited with status ${status}`;
      }
      log.info(
        `round ${r + 1} of ${total}: ${failedRound ? failure : 'app exited with status 0'} after ` +
          `${runtime.toFixed(3)} s, ${data.times.length} samples`,
      );
      if (loop.overruns > 0)
        log.warning(
          `round ${r + 1}: ${loop.overruns} sampling deadlines missed (reads slower than the period)`,
        );
      for (const problem of app.problems) log.warning(`round ${r + 1}: ${problem}`);
      if (warmup && !failedRound) continue;
      const metrics: RoundMetrics = roundMetrics(series, data, runtime, events, post, estimator);
      for (const problem of metrics.problems) log.warning(`round ${r + 1}: ${problem}`);
      metrics.problems.push(...app.problems);
      const kept = rounds.add(
        {
          id: warmup ? `warmup_${r}` : String(r - config.benchmarking.warmup_rounds),
          exit: app.exit,
          overruns: loop.overruns,
          times: data.times,
          values: data.values,
          events,
          metrics,
        },
        failedRound,
      );
      if (!kept && rounds.omitted === 1)
        log.warning(
          `round ${r + 1}: the report keeps ${rounds.kept.length} rounds whole; this and later rounds ` +
            'are only in its statistics',
        );
      if (failedRound) break;
    }
  } finally {
    for (const sig of INTERRUPTS) process.off(sig, noteInterrupt);
  }
  if (interrupted !== undefined && failure === '') {
    failure = `interrupted by ${interrupted}`;
    status = 128 + (constants.signals[interrupted] ?? 0);
  }
  const unavailable = [
    ...pio.diagnostics(),
    ...(await notAvailable(pio, sampler, selection.notes, estimator)),
    ...selection.notes.map((reason) => ({ backend: 'monitor', reason })),
  ];
  if (rounds.omitted > 0)
    unavailable.push({
      backend: 'monitor',
      reason:
        `${rounds.omitted} of ${rounds.omitted + rounds.kept.length} rounds are only in the summary ` +
        `statistics, not kept whole (samples, per-round figures): a report keeps at most ${KEPT_ROUNDS} ` +
        `rounds and ${KEPT_SAMPLE_VALUES} sample values`,
    });
  const metadata = collectMetadata(pio);
  const report: Report = {
    kind: 'joulegate-report',
    version: 1,
    app: config.output.app_name || appNameOf(command),
    runId: config.output.run_id || started.toISOString().replace(/[:]/g, '-').replace(/\..*$/, ''),
    failed: failure !== '',
    failure,
    created: started.toISOString(),
    host: metadata.hostname!,
    metadata,
    config: flattenConfig(config),
    samplingPeriod: config.monitor.sampling_period,
    priceUnit: config['post-processing'].price_unit,
    units: reportUnits(config['post-processing'].price_unit),
    series,
    sources: describeSources(series, estimator, new Set(sampler.withoutValue().map((s) => s.id))),
    unavailable,
    warmupRounds: config.benchmarking.warmup_rounds,
    rounds: rounds.kept,
    ...(rounds.omitted > 0 ? { omittedRounds: rounds.omitted } : {}),
    summary: rounds.summary(),
    regions: rounds.regionSummary(),
    ...(attribution ? { attribution: attribution.report() } : {}),
    ...(node ? { ranks: node.info(members) } : {}),
  };
  return { report, status };
}
