import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { PICKLE_REFUSED } from '../../monitor/config/schema.js';
import { JoulegateError } from '../../platform/errors.js';

/**
 * `joulegate export FILE FORMAT` re-renders a json or hdf5 report next to it; perun's form
 * `export FILE OUT_DIR FORMAT` writes it into OUT_DIR (created when missing).
 */
export function register(program: Command): void {
  program
    .command('export')
    .summary('Convert a json or hdf5 report (joulegate or perun) to another format')
    .usage('[options] <file> [out_dir] <format>')
    .argument('<file>', "a report written by monitor (.json or .hdf5), or perun's .hdf5 or .json file")
    .argument('<out_dir|format>', "output directory (perun's form, then FORMAT follows), or the format")
    .argument('[format]', 'text|json|csv|bench|html|hdf5')
    .option('-i, --id <run_id>', "the run of perun's .hdf5 or .json file to export (default: its latest)")
    .action(async (file: string, second: string, third: string | undefined, opts: { id?: string }) => {
      const { OUTPUT_FORMATS, readReport, writeFormat } = await import('../../report/write.js');
      const format = third ?? second;
      const outDir = third === undefined ? dirname(file) : second;
      if (!OUTPUT_FORMATS.includes(format)) {
        const why = format === 'pickle' ? `${PICKLE_REFUSED} ` : `unknown format ${format} `;
        throw new JoulegateError(`${why}(expected one of ${OUTPUT_FORMATS.join(', ')})`);
      }
      const report = await readReport(file, opts.id);
      if (third !== undefined) mkdirSync(outDir, { recursive: true });
      process.stdout.write(`${await writeFormat(report, format, outDir)}\n`);
    });
}
