import type { Command } from 'commander';
import { openPlatform } from '../../backends/open-platform.js';
import { collectMetadata } from '../../monitor/metadata.js';

/** `joulegate metadata`: host, CPU, GPUs, kernel, versions and backend metadata as JSON. */
export function register(program: Command): void {
  program
    .command('metadata')
    .summary('Print host and backend metadata as JSON')
    .action(async () => {
      const pio = await openPlatform();
      try {
        const backends = Object.fromEntries(pio.loadedBackends().map((b) => [b.name, b.metadata()]));
        const meta = collectMetadata(pio);
        process.stdout.write(`${JSON.stringify({ [meta.hostname!]: { ...meta, backends } }, null, 2)}\n`);
      } finally {
        await pio.close();
      }
    });
}
