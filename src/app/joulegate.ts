/** Start-up of the `joulegate` command (bundled into dist/app/joulegate.cjs by scripts/bundle-cli.mjs). */
import type { Programs } from '../cli/commands/cluster.js';
import { main } from '../cli/program.js';
import { startCli } from './cli-start.js';

// Loaded when `joulegate exporter` runs, not at every start.
const programs: Programs = {
  exporter: async (settings) => (await import('./exporter.js')).runExporter(settings),
};

startCli((argv, asTool) => main(argv, programs, asTool));
