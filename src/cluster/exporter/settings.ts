import { InvalidArgumentError } from '../../platform/errors.js';

/** Whose energy the exporter attributes: Slurm jobs, users' sessions, system services. */
export type ConsumerSource = 'slurm' | 'users' | 'system';
export const CONSUMER_SOURCES: readonly ConsumerSource[] = ['slurm', 'users', 'system'];

/** The exporter's port, in the 9xxx range Prometheus exporters use (docs/exporter.md). */
const DEFAULT_PORT = 9863;

/**
 * Every default of `joulegate exporter`, written once: the command's flags and help show these,
 * and the systemd unit (packaging/joulegate-exporter.service) leaves them to the command.
 * Loopback only by default, so nothing is exposed until an admin says so.
 */
export const EXPORTER_DEFAULTS = {
  port: DEFAULT_PORT,
  listen: `127.0.0.1:${DEFAULT_PORT}`,
  /** The variable that sets the listen address when --listen is not given (the unit's EnvironmentFile). */
  listenEnv: 'JOULEGATE_EXPORTER_LISTEN',
  consumers: ['slurm', 'users'] as readonly ConsumerSource[],
  consumerExpiryS: 300,
  maxConsumers: 100,
  /** Where counters are kept across exporter restarts (the unit's StateDirectory). */
  stateDir: '/var/lib/joulegate/exporter',
  /** The variable that sets the state directory when --state-dir is not given. */
  stateDirEnv: 'JOULEGATE_EXPORTER_STATE_DIR',
  /** The other flags' variables (a flag wins over its variable): /etc/default/joulegate-exporter sets them. */
  nodeEnv: 'JOULEGATE_EXPORTER_NODE',
  consumersEnv: 'JOULEGATE_EXPORTER_CONSUMERS',
  /** cgroups separated by white space. */
  cgroupsEnv: 'JOULEGATE_EXPORTER_CGROUPS',
  consumerExpiryEnv: 'JOULEGATE_EXPORTER_CONSUMER_EXPIRY',
  maxConsumersEnv: 'JOULEGATE_EXPORTER_MAX_CONSUMERS',
  webConfigFileEnv: 'JOULEGATE_EXPORTER_WEB_CONFIG_FILE',
} as const;

/** What one exporter process serves, checked: the command's flags, parsed. */
export interface ExporterSettings {
  host: string;
  port: number;
  /** Value of the `node` label on every series. */
  node: string;
  /** Consumers to attribute energy to (none: no attribution unless `cgroups`). */
  sources: readonly ConsumerSource[];
  /** cgroups (paths under the cgroup root) that are consumers of their own. */
  cgroups: readonly string[];
  /** A consumer that got no energy this long is dropped. */
  consumerExpiryS: number;
  /** Consumers tracked at most; the rest count as unattributed. */
  maxConsumers: number;
  /** Directory of the counters' state across restarts; undefined: none (counters start at 0). */
  stateDir?: string;
  /** exporter-toolkit web config (TLS, basic auth): --web.config.file; undefined: plain HTTP, no auth. */
  webConfigFile?: string;
}

/** "host:port", "[v6]:port" or ":port" (all addresses) → host and port. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d+)$/.exec(text.trim());
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new InvalidArgumentError(
      `--listen "${text}": expected HOST:PORT (e.g. ${EXPORTER_DEFAULTS.listen}, [::1]:${DEFAULT_PORT}, :${DEFAULT_PORT})`,
    );
  }
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** A --consumers list ("slurm,users", "none") → its sources, or one clear error. */
export function parseConsumers(text: string): ConsumerSource[] {
  const sources = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '' && s !== 'none');
  for (const s of sources) {
    if (!(CONSUMER_SOURCES as readonly string[]).includes(s))
      throw new InvalidArgumentError(
        `--consumers: "${s}" is not one of ${CONSUMER_SOURCES.join(', ')}, none`,
      );
  }
  return sources as ConsumerSource[];
}
