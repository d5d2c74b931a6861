import { hostname } from 'node:os';
import { type Command, Option } from 'commander';
import { openPlatform } from '../../backends/open-platform.js';
import type { ConsumerSource } from '../../cluster/exporter/consumers.js';
import { InvalidArgumentError } from '../../platform/errors.js';

interface ExporterOptions {
  listen: string;
  node: string;
  consumers: string;
  cgroup: string[];
  consumerExpiry: string;
  maxConsumers: string;
}

/** A whole number ≥ min from an option, or one clear error. */
function wholeNumber(text: string, option: string, min: number): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min)
    throw new InvalidArgumentError(`${option} "${text}": expected a whole number ≥ ${min}`);
  return n;
}

/** `joulegate exporter`: the node's energy, power and per-consumer energy for Prometheus (docs/exporter.md). */
export function register(program: Command): void {
  program
    .command('exporter')
    .summary("Serve this node's energy and power to Prometheus (/metrics)")
    .description(
      'Serve Prometheus text and OpenMetrics on --listen: energy counters (joules, wrap-corrected), ' +
        'power, utilisation, frequency, temperature, and energy per Slurm job, user or cgroup. ' +
        'Runs as root, or unprivileged through joulegated (the signals this user was granted).',
    )
    .option('--listen <host:port>', 'address to serve /metrics on', '127.0.0.1:9863')
    .option('--node <name>', 'value of the node label on every series (default: the host name)', hostname())
    .addOption(
      new Option(
        '--consumers <list>',
        'consumers to attribute energy to: slurm, users, system (services and scopes), none',
      ).default('slurm,users'),
    )
    .option('--cgroup <path...>', 'also attribute energy to these cgroups', [])
    .option('--consumer-expiry <s>', 'drop a consumer that got no energy for this long', '300')
    .option('--max-consumers <n>', 'track at most this many consumers (others count as unattributed)', '100')
    .action(async (opts: ExporterOptions) => {
      const [{ NodeSampler }, { Exposition }, { ExporterServer, parseListen }, consumersModule] =
        await Promise.all([
          import('../../cluster/exporter/node-metrics.js'),
          import('../../cluster/exporter/exposition.js'),
          import('../../cluster/exporter/server.js'),
          import('../../cluster/exporter/consumers.js'),
        ]);
      const { host, port } = parseListen(opts.listen);
      const sources = opts.consumers
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '' && s !== 'none');
      for (const s of sources) {
        if (!(consumersModule.CONSUMER_SOURCES as readonly string[]).includes(s)) {
          throw new InvalidArgumentError(`--consumers: "${s}" is not one of slurm, users, system, none`);
        }
      }
      const expiryS = wholeNumber(opts.consumerExpiry, '--consumer-expiry', 1);
      const maxConsumers = wholeNumber(opts.maxConsumers, '--max-consumers', 0);
      if (opts.node.trim() === '') throw new InvalidArgumentError('--node: the node name may not be empty');
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const pio = await openPlatform({ warn: log });
      const { Sysroot } = await import('../../platform/sysroot.js');
      const sampler = new NodeSampler(pio);
      for (const note of sampler.notes) log(`joulegate exporter: ${note}`);
      const attribute = sources.length > 0 || opts.cgroup.length > 0;
      const { processUtilizationReader, NvmlGpuUse } = await import('../../attribution/gpu-use.js');
      const gpuReader = attribute ? processUtilizationReader(pio) : undefined;
      const consumers = attribute
        ? new consumersModule.ConsumerEnergy(new Sysroot(), pio.topology, {
            gpu: gpuReader && new NvmlGpuUse(gpuReader, (line) => log(`joulegate exporter: ${line}`)),
            sources: sources as ConsumerSource[],
            cgroups: opts.cgroup,
            expiryS,
            maxConsumers,
          })
        : undefined;
      const exposition = new Exposition(sampler, opts.node, attribute);
      const server = new ExporterServer({ sampler, exposition, consumers, log });
      const address = await server.listen(host, port);
      log(
        `joulegate exporter: serving ${sampler.channels.length} series of node ${opts.node} on http://${address}/metrics`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await server.close();
      await pio.close();
    });
}
