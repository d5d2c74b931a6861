import type { Command } from 'commander';
import { register as registerExporter } from './exporter.js';
import { register as registerJobReport } from './job-report.js';

/** The cluster-scale commands (docs/exporter.md): exporter and job-report. */
export function registerClusterCommands(program: Command): void {
  registerExporter(program);
  registerJobReport(program);
}
