import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Report } from '../../monitor/model/report-model.js';
import { InvalidArgumentError } from '../../platform/errors.js';
import { writeAll, writeWhole } from '../../platform/whole-file.js';
import { addConfigOptions, configFromOptions, optionsWithGlobals } from '../config-options.js';

interface JobReportOptions {
  prometheus?: string;
  reports?: string[];
  slurmJob?: string;
  nodes?: string;
  start?: string;
  end?: string;
  scrapeInterval?: string;
  format: string;
  output?: string;
}

/** The first `bytes` of a file as text (a directory may hold reports of any size). */
function headOf(path: string, bytes: number): string {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(bytes);
    return head.toString('utf8', 0, readSync(fd, head, 0, bytes, 0));
  } finally {
    closeSync(fd);
  }
}

/** A time given as Unix seconds or an ISO 8601 date, as Unix seconds. */
export function parseTime(text: string, option: string): number {
  const trimmed = text.trim();
  const seconds = /^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : Date.parse(trimmed) / 1000;
  if (!Number.isFinite(seconds)) {
    throw new InvalidArgumentError(`${option} "${text}": expected Unix seconds or an ISO 8601 time`);
  }
  return seconds;
}

/**
 * The monitor JSON reports named: files as given, and in a directory every `*.json` that is a
 * monitor report (a job report or another JSON file there is skipped).
 */
function monitorReports(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const path of paths) {
    let isDir: boolean;
    try {
      isDir = statSync(path).isDirectory();
    } catch {
      throw new InvalidArgumentError(`--reports: ${path} does not exist`);
    }
    if (!isDir) {
      out.push(path);
      continue;
    }
    for (const name of readdirSync(path)
      .filter((n) => n.endsWith('.json') && !n.endsWith('.bench.json'))
      .sort()) {
      const file = join(path, name);
      if (/"kind"\s*:\s*"joulegate-report"/.test(headOf(file, 200))) out.push(file);
    }
  }
  if (out.length === 0)
    throw new InvalidArgumentError(`--reports: no monitor JSON report in ${paths.join(', ')}`);
  return out;
}

/**
 * The job's nodes and window: from the options, else the job's environment (SLURM_JOB_NODELIST,
 * SLURM_JOB_START_TIME/END_TIME of the same job), else `scontrol show job` for `--slurm-job`.
 */
async function jobWindow(
  opts: JobReportOptions,
  env: NodeJS.ProcessEnv,
): Promise<{ nodeList: string; start: number; end: number; notes: string[] }> {
  const job = opts.slurmJob;
  const sameJob = job !== undefined && env.SLURM_JOB_ID === job;
  let nodeList = opts.nodes ?? (job !== undefined ? env.SLURM_JOB_NODELIST : undefined);
  if (nodeList?.trim() === '') nodeList = undefined;
  const startText = opts.start ?? (sameJob ? env.SLURM_JOB_START_TIME : undefined);
  const endText = opts.end ?? (sameJob ? env.SLURM_JOB_END_TIME : undefined);
  let start = startText === undefined ? undefined : parseTime(startText, '--start');
  let end = endText === undefined ? undefined : parseTime(endText, '--end');
  if (job !== undefined && (nodeList === undefined || start === undefined)) {
    const { scontrolJob } = await import('../../cluster/job-report/slurm-job.js');
    const record = scontrolJob(job);
    nodeList ??= record.nodeList;
    start ??= record.start;
    end ??= record.end;
  }
  if (nodeList === undefined) throw new InvalidArgumentError('give --nodes a,b,c or --slurm-job N');
  if (start === undefined) throw new InvalidArgumentError("give --start (the job's start time)");
  end ??= Date.now() / 1000;
  const notes: string[] = [];
  if (end === start && opts.start === undefined && opts.end === undefined) {
    // Slurm's times are whole seconds: a job shorter than a second starts and ends "at once".
    // It ran within the second that follows its start, which becomes the window.
    end = start + 1;
    notes.push(
      "Slurm's start and end times are the same second (1 s resolution): the window is that whole second",
    );
  }
  if (!(end > start)) {
    throw new InvalidArgumentError(
      `the window ends (${new Date(end * 1000).toISOString()}) before it starts (${new Date(start * 1000).toISOString()})`,
    );
  }
  return { nodeList, start, end, notes };
}

/** `joulegate job-report`: a (Slurm) job's energy on every node, from Prometheus (docs/exporter.md). */
export function register(program: Command): void {
  const cmd = program
    .command('job-report')
    .summary("Report a job's energy per node and device from Prometheus")
    .description(
      "Query Prometheus for the joulegate exporter counters of the job's nodes over its window " +
        '(or combine per-node monitor reports) and print energy per node and device, the total, ' +
        'CO2 and cost. Missing scrapes and nodes are stated as gaps, never counted as zero.',
    )
    .option('--prometheus <url>', 'Prometheus base URL (e.g. http://prometheus:9090)')
    .option(
      '--reports <path...>',
      'instead of Prometheus: per-node monitor JSON reports (files or directories)',
    )
    .option(
      '--slurm-job <id>',
      "Slurm job id: nodes and window from the job's environment (SLURM_JOB_NODELIST, SLURM_JOB_START_TIME/END_TIME), else from scontrol show job",
    )
    .option('--nodes <list>', 'nodes (node labels), as a Slurm host list: a,b,c or node[01-04]')
    .option('--start <time>', 'window start: Unix seconds or ISO 8601')
    .option('--end <time>', 'window end: Unix seconds or ISO 8601 (default: now)')
    .option('--scrape-interval <s>', 'scrape interval in seconds (default: from the samples)')
    .option('--format <list>', 'text, json or csv (comma-separated)', 'text')
    .option('-o, --output <file>', 'write to this file instead of stdout (one format)');
  addConfigOptions(cmd, ['pue', 'emissions_factor', 'price_factor', 'price_unit']);
  cmd.action(async (opts: JobReportOptions & Record<string, unknown>, self: Command) => {
    const [{ expandHostlist }, { jobEnergy }, { PrometheusClient, prometheusUrl }, report] =
      await Promise.all([
        import('../../cluster/job-report/hostlist.js'),
        import('../../cluster/job-report/job-energy.js'),
        import('../../cluster/job-report/prometheus.js'),
        import('../../cluster/job-report/render.js'),
      ]);
    const formats = opts.format.split(',').map((f) => f.trim());
    for (const f of formats) {
      if (!(report.JOB_REPORT_FORMATS as readonly string[]).includes(f)) {
        throw new InvalidArgumentError(`--format "${f}": expected ${report.JOB_REPORT_FORMATS.join(', ')}`);
      }
    }
    if (opts.output !== undefined && formats.length !== 1) {
      throw new InvalidArgumentError('--output takes one format');
    }
    if ((opts.prometheus === undefined) === (opts.reports === undefined)) {
      throw new InvalidArgumentError(
        'give either --prometheus URL or --reports PATH… (per-node monitor reports)',
      );
    }
    const env = process.env;
    const config = await configFromOptions(optionsWithGlobals(self));
    const post = config['post-processing'];
    const factors = {
      pue: post.pue,
      emissionsFactor: post.emissions_factor,
      priceFactor: post.price_factor,
      priceUnit: post.price_unit,
    };
    const write = (result: Parameters<typeof report.renderJobReport>[0]) => {
      const text = formats
        .map((f) => report.renderJobReport(result, f as 'text' | 'json' | 'csv'))
        .join('\n');
      if (opts.output !== undefined)
        writeWhole({ path: opts.output }, (fd) => writeAll(fd, Buffer.from(text)));
      else process.stdout.write(text);
    };
    if (opts.reports !== undefined) {
      const [{ combineReports }, { ReportReader }] = await Promise.all([
        import('../../cluster/job-report/from-reports.js'),
        import('../../report/bounded-read.js'),
      ]);
      const list = opts.nodes ?? (opts.slurmJob !== undefined ? env.SLURM_JOB_NODELIST : undefined);
      // Reports from other nodes' runs are read as any file from elsewhere: bounded, one line when bad.
      const reader = new ReportReader();
      const loaded: { path: string; report: Report }[] = [];
      try {
        for (const path of monitorReports(opts.reports))
          loaded.push({ path, report: await reader.read(path) });
      } finally {
        reader.close();
      }
      write(
        combineReports(
          loaded,
          list === undefined || list.trim() === '' ? undefined : expandHostlist(list),
          { job: opts.slurmJob ?? '', source: `monitor reports ${opts.reports.join(' ')}` },
          factors,
        ),
      );
      return;
    }
    const { nodeList, start, end, notes } = await jobWindow(opts, env);
    let intervalS: number | undefined;
    if (opts.scrapeInterval !== undefined) {
      intervalS = Number(opts.scrapeInterval);
      if (!(intervalS > 0))
        throw new InvalidArgumentError(`--scrape-interval "${opts.scrapeInterval}": expected seconds > 0`);
    }
    const base = prometheusUrl(opts.prometheus!);
    write(
      await jobEnergy(
        new PrometheusClient(base),
        base.href,
        { job: opts.slurmJob, nodes: expandHostlist(nodeList), start, end, intervalS, notes },
        factors,
      ),
    );
  });
}
