import { hostname } from 'node:os';
import { type Command, Option } from 'commander';
import {
  EXPORTER_DEFAULTS,
  type ExporterSettings,
  parseConsumers,
  parseListen,
} from '../../cluster/exporter/settings.js';
import { InvalidArgumentError } from '../../platform/errors.js';

interface ExporterOptions {
  listen: string;
  node: string;
  consumers: string;
  cgroup: string[];
  consumerExpiry: string;
  maxConsumers: string;
  stateDir: string;
  /** commander keeps the dotted name as it is. */
  'web.config.file'?: string;
}

/** Serves the exporter with checked settings (src/app/exporter.ts, given by the program's start-up). */
export type RunExporter = (settings: ExporterSettings) => Promise<void>;

/** A whole number ≥ min from an option, or one clear error. */
function wholeNumber(text: string, option: string, min: number): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min)
    throw new InvalidArgumentError(`${option} "${text}": expected a whole number ≥ ${min}`);
  return n;
}

/** The exporter's settings from its flags; a bad flag is one clear error. */
function settingsOf(opts: ExporterOptions): ExporterSettings {
  const { host, port } = parseListen(opts.listen);
  const sources = parseConsumers(opts.consumers);
  const consumerExpiryS = wholeNumber(opts.consumerExpiry, '--consumer-expiry', 1);
  const maxConsumers = wholeNumber(opts.maxConsumers, '--max-consumers', 0);
  if (opts.node.trim() === '') throw new InvalidArgumentError('--node: the node name may not be empty');
  const stateDir = opts.stateDir.trim();
  if (stateDir !== 'none' && !stateDir.startsWith('/'))
    throw new InvalidArgumentError(`--state-dir "${opts.stateDir}": expected an absolute path, or none`);
  const webConfigFile = opts['web.config.file'];
  if (webConfigFile !== undefined && webConfigFile.trim() === '')
    throw new InvalidArgumentError('--web.config.file: expected a file name');
  return {
    host,
    port,
    node: opts.node,
    sources,
    cgroups: opts.cgroup,
    consumerExpiryS,
    maxConsumers,
    ...(stateDir === 'none' ? {} : { stateDir }),
    ...(webConfigFile === undefined ? {} : { webConfigFile }),
  };
}

/** `joulegate exporter`: the node's energy, power and per-consumer energy for Prometheus (docs/exporter.md). */
export function register(program: Command, runExporter: RunExporter): void {
  const defaults = EXPORTER_DEFAULTS;
  program
    .command('exporter')
    .summary("Serve this node's energy and power to Prometheus (/metrics)")
    .description(
      'Serve Prometheus text and OpenMetrics on --listen: energy counters (joules, wrap-corrected), ' +
        'power, utilisation, frequency, temperature, and energy per Slurm job, user or cgroup. ' +
        'Runs as root, or unprivileged through joulegated (the signals this user was granted).',
    )
    .addOption(
      new Option('--listen <host:port>', 'address to serve /metrics on')
        .env(defaults.listenEnv)
        .default(defaults.listen),
    )
    .addOption(
      new Option('--node <name>', 'value of the node label on every series (default: the host name)')
        .env(defaults.nodeEnv)
        .default(hostname()),
    )
    .addOption(
      new Option(
        '--consumers <list>',
        'consumers to attribute energy to: slurm, users, system (services and scopes), none',
      )
        .env(defaults.consumersEnv)
        .default(defaults.consumers.join(',')),
    )
    .addOption(
      new Option('--cgroup <path...>', 'also attribute energy to these cgroups')
        .env(defaults.cgroupsEnv)
        .argParser((value: string, previous: string[]) => [
          ...previous,
          ...value.split(/\s+/).filter((p) => p !== ''),
        ])
        .default([]),
    )
    .addOption(
      new Option('--consumer-expiry <s>', 'drop a consumer that got no energy for this long')
        .env(defaults.consumerExpiryEnv)
        .default(String(defaults.consumerExpiryS)),
    )
    .addOption(
      new Option('--max-consumers <n>', 'track at most this many consumers (others count as unattributed)')
        .env(defaults.maxConsumersEnv)
        .default(String(defaults.maxConsumers)),
    )
    .addOption(
      new Option(
        '--state-dir <dir>',
        'keep energy counters here across exporter restarts (none: start them from 0 each time)',
      )
        .env(defaults.stateDirEnv)
        .default(defaults.stateDir),
    )
    .addOption(
      new Option(
        '--web.config.file <path>',
        "TLS and basic auth, in exporter-toolkit's YAML format (as node_exporter's; docs/exporter.md)",
      ).env(defaults.webConfigFileEnv),
    )
    .action((opts: ExporterOptions) => runExporter(settingsOf(opts)));
}
