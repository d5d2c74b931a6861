import type { Command } from 'commander';
import { type RunExporter, register as registerExporter } from './exporter.js';
import { register as registerJobReport } from './job-report.js';

/**
 * The long-running programs a command starts, assembled in src/app/ (above the CLI) and handed in
 * by the start-up: `joulegate exporter` parses its flags here and runs the exporter there.
 */
export interface Programs {
  exporter: RunExporter;
}

/** The cluster-scale commands (docs/exporter.md): exporter and job-report. */
export function registerClusterCommands(program: Command, programs: Programs): void {
  registerExporter(program, programs.exporter);
  registerJobReport(program);
}
