import type { Command } from 'commander';
import { openPlatform } from '../../backends/open-platform.js';
import { errorMessage } from '../../platform/errors.js';
import { addConfigOptions, configFromOptions } from '../config-options.js';

/** `joulegate monitor [options] -- CMD ARGS…` */
export function register(program: Command): void {
  // Options after the app's name belong to the app.
  program.enablePositionalOptions();
  const cmd = program
    .command('monitor')
    .summary('Run an app and report its energy, power, CO2 and cost')
    .description('Run CMD (after --) while sampling energy sources; write reports to data_out.')
    .argument('<command...>', 'the app and its arguments')
    .passThroughOptions();
  addConfigOptions(cmd);
  cmd.action(async (command: string[], opts: Record<string, unknown>) => {
    const config = await configFromOptions(opts);
    // The monitor's modules load only when it runs, keeping other commands' start cheap.
    const [{ runMonitor }, { AppStartError }, { formatsOf, writeFormat }, { createLogger }] =
      await Promise.all([
        import('../../monitor/monitor.js'),
        import('../../monitor/run-app.js'),
        import('../../report/write.js'),
        import('../../monitor/log.js'),
      ]);
    const log = createLogger({ level: config.debug.log_lvl, file: config.debug.log_file });
    const pio = await openPlatform();
    const progress = process.stderr.isTTY ? process.stderr : undefined;
    let result: Awaited<ReturnType<typeof runMonitor>>;
    try {
      result = await runMonitor({ command, config, pio, progress, log });
    } catch (err) {
      if (!(err instanceof AppStartError)) throw err;
      process.stderr.write(`Error: ${err.message}\n`);
      process.exitCode = err.status;
      return;
    } finally {
      await pio.close();
    }
    const { report, status } = result;
    const formats = formatsOf(config.output.format);
    let writeFailed = false;
    for (const format of formats) {
      try {
        const path = await writeFormat(report, format, config.output.data_out);
        process.stderr.write(`joulegate: wrote ${path}\n`);
      } catch (err) {
        writeFailed = true;
        process.stderr.write(`joulegate: could not write ${format} report: ${errorMessage(err)}\n`);
      }
    }
    if (formats.includes('text'))
      process.stdout.write((await import('../../report/text.js')).renderText(report));
    if (report.failed) process.stderr.write(`joulegate: ${report.failure}; partial report written\n`);
    process.exitCode = status !== 0 ? status : writeFailed ? 1 : 0;
  });
}
