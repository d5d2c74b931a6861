import type { Command } from 'commander';
import { openPlatform } from '../../backends/open-platform.js';
import type { Diagnostic } from '../../platform/backend.js';
import { availableSensors, unavailableSensors } from '../../platform/sensors.js';

/** `joulegate sensors [--all] [--json]`: what can be measured here, and what cannot and why. */
export function register(program: Command): void {
  program
    .command('sensors')
    .summary('List the sensors of every backend, and missing backends with the reason')
    .option('--all', 'every sensor of every backend (default: those the monitor samples)')
    .option('--json', 'JSON instead of a table')
    .action(async (opts: { all?: boolean; json?: boolean }) => {
      const [{ selectSeries }, { seriesUnit }, { markdownTable }] = await Promise.all([
        import('../../monitor/signals.js'),
        import('../../monitor/model/units.js'),
        import('../../report/text.js'),
      ]);
      const pio = await openPlatform();
      try {
        const rows: { sensor: string; backend: string; device: string; unit: string }[] = [];
        const selection = selectSeries(pio);
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
