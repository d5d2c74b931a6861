import { dirname } from 'node:path';
import type { Command } from 'commander';
import { JoulegateError } from '../../platform/errors.js';

/** `joulegate export FILE FORMAT`: re-renders a json or hdf5 report next to it. */
export function register(program: Command): void {
  program
    .command('export')
    .summary('Convert a json or hdf5 report to another format')
    .argument('<file>', 'a report written by monitor (.json or .hdf5)')
    .argument('<format>', 'text|json|csv|bench|html|hdf5')
    .action(async (file: string, format: string) => {
      const { OUTPUT_FORMATS, readReport, writeFormat } = await import('../../report/write.js');
      if (!OUTPUT_FORMATS.includes(format)) {
        throw new JoulegateError(`unknown format ${format} (expected one of ${OUTPUT_FORMATS.join(', ')})`);
      }
      const report = await readReport(file);
      process.stdout.write(`${await writeFormat(report, format, dirname(file))}\n`);
    });
}
