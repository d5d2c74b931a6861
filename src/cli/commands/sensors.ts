import type { Command } from 'commander';
import { openPlatform } from '../../backends/open-platform.js';
import type { Diagnostic } from '../../platform/backend.js';
import { JoulegateError } from '../../platform/errors.js';
import { availableSensors, unavailableSensors } from '../../platform/sensors.js';
import { addConfigOptions, configFromOptions, optionsWithGlobals } from '../config-options.js';

interface SensorsOptions {
  all?: boolean;
  by_rank?: boolean;
  active?: boolean;
  json?: boolean;
}

/**
 * `joulegate sensors [--all | --by_rank | --active] [--json]`: what can be measured here, and
 * what cannot and why. perun's `--by_rank` lists each MPI rank's sensors: one joulegate process
 * is one rank, so it is `--all`. perun's `--active` applies the configuration's filters: the
 * sensors `monitor` samples with these settings.
 */
export function register(program: Command): void {
  const cmd = program
    .command('sensors')
    .summary('List the sensors of every backend, and missing backends with the reason')
    .option('--all', 'every sensor of every backend (default: those the monitor samples)')
    .option('--by_rank', "perun's per-rank list: this process is one rank, so --all")
    .option('--active', 'those the monitor samples with the configuration (include/exclude settings)')
    .option('--json', 'JSON instead of a table');
  addConfigOptions(cmd, FILTER_KEYS);
  cmd.action(async (opts: SensorsOptions, self: Command) => {
    if ([opts.all, opts.by_rank, opts.active].filter(Boolean).length > 1)
      throw new JoulegateError('sensors: --all, --by_rank and --active exclude each other');
    if (opts.by_rank) opts.all = true;
    const [
      { checkFilters, selectSeries },
      { seriesUnit },
      { markdownTable },
      { regexesOf },
      { registeredBackends },
    ] = await Promise.all([
      import('../../monitor/signals.js'),
      import('../../monitor/model/units.js'),
      import('../../report/text.js'),
      import('../../monitor/config/load.js'),
      import('../../backends/registry.js'),
    ]);
    // --active: the configuration's filters, as monitor applies them (and refuses them).
    const config = opts.active ? await configFromOptions(optionsWithGlobals(self)) : undefined;
    const pio = await openPlatform();
    try {
      const rows: { sensor: string; backend: string; device: string; unit: string }[] = [];
      const filters = config && {
        includeSensors: regexesOf(config.monitor.include_sensors),
        excludeSensors: regexesOf(config.monitor.exclude_sensors),
        includeBackends: regexesOf(config.monitor.include_backends),
        excludeBackends: regexesOf(config.monitor.exclude_backends),
      };
      const selection = selectSeries(pio, filters);
      const warnings = filters
        ? checkFilters(
            pio,
            filters,
            selection,
            registeredBackends().map((b) => b.name),
          )
        : [];
      for (const w of warnings) process.stderr.write(`joulegate: ${w}\n`);
      if (opts.all) {
        for (const b of pio.loadedBackends()) {
          for (const [id, [backend, device, unit]] of Object.entries(availableSensors(b, pio.topology))) {
            rows.push({ sensor: id, backend, device, unit });
          }
        }
      } else {
        for (const s of selection.series) {
          rows.push({
            sensor: s.id,
            backend: s.backend,
            device: s.group,
            unit: seriesUnit(s.kind),
          });
        }
      }
      rows.sort((a, b) => a.backend.localeCompare(b.backend) || a.sensor.localeCompare(b.sensor));
      // A domain a source lacks (a package without RAPL) is named with the monitor's reason.
      // With --all, also every index of a domain where a listed signal does not exist.
      const missing: Diagnostic[] = [
        ...pio.diagnostics(),
        ...(opts.all ? pio.loadedBackends().flatMap((b) => unavailableSensors(b, pio.topology)) : []),
        ...selection.notes.map((reason) => ({ backend: 'monitor', reason })),
      ];
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ sensors: rows, unavailable: missing }, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `${markdownTable(
          ['Sensor', 'Source', 'Device', 'Unit'],
          rows.map((r) => [r.sensor, r.backend, r.device, r.unit]),
        )}\n`,
      );
      if (rows.length === 0) process.stdout.write('(no sensors the monitor can use on this host)\n');
      if (missing.length > 0) {
        process.stdout.write('\nNot available:\n');
        for (const d of missing)
          process.stdout.write(`  ${d.backend}${d.signal ? ` ${d.signal}` : ''}: ${d.reason}\n`);
      }
    } finally {
      await pio.close();
    }
  });
}

/** The settings `sensors --active` takes as flags too. */
const FILTER_KEYS = ['include_sensors', 'exclude_sensors', 'include_backends', 'exclude_backends'];
