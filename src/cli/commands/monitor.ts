import type { Command } from 'commander';
import { openPlatform } from '../../backends/open-platform.js';
import { addConfigOptions, configFromOptions, optionsWithGlobals } from '../config-options.js';
import { addConsumerOptions, addIdleOptions, attributionSetup } from './attribute-options.js';

const INTERRUPTS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** `joulegate monitor [options] [--] CMD ARGS…` (CMD may be a script: `monitor train.py`). */
export function register(program: Command): void {
  // Options after the app's name belong to the app.
  program.enablePositionalOptions();
  const cmd = program
    .command('monitor')
    .summary('Run an app and report its energy, power, CO2 and cost')
    .description(
      'Run CMD while sampling energy sources; write reports to data_out. CMD may be a script as with perun: ' +
        'train.py runs with python3 and job.sh with sh unless executable. Options after CMD are its own.',
    )
    .argument('<command...>', 'the app and its arguments')
    .passThroughOptions();
  addConfigOptions(cmd);
  cmd.option('-b, --binary', "perun's flag: start CMD as given, also a .py or .sh file (no python3 or sh)");
  addIdleOptions(addConsumerOptions(cmd));
  cmd.action(async (command: string[], _own: Record<string, unknown>, self: Command) => {
    const opts = optionsWithGlobals(self);
    const config = await configFromOptions(opts);
    // The monitor's modules load only when it runs, keeping other commands' start cheap.
    const [{ runMonitor }, { AppStartError }, { checkOutput, formatsOf, writeReports }, { createLogger }] =
      await Promise.all([
        import('../../monitor/monitor.js'),
        import('../../monitor/run-app.js'),
        import('../../report/write.js'),
        import('../../monitor/log.js'),
      ]);
    // Before the app starts: a report that cannot be written must not cost a long run.
    // perun's habit (hdf5_file = app): its <app>.hdf5 gets every run, whatever the formats.
    const appFile = config.output.hdf5_file === 'app';
    const formats = formatsOf(config.output.format);
    if (appFile && !formats.includes('hdf5')) formats.push('hdf5');
    await checkOutput(formats, config.output.data_out);
    const log = createLogger({ level: config.debug.log_lvl, file: config.debug.log_file });
    // Named consumers are resolved before the app starts: a wrong job id costs no run.
    const attribution = await attributionSetup(opts);
    const pio = await openPlatform();
    const progress = process.stderr.isTTY ? process.stderr : undefined;
    let result: Awaited<ReturnType<typeof runMonitor>>;
    try {
      const binary = opts.binary === true;
      result = await runMonitor({ command, config, pio, progress, log, attribution, binary });
    } catch (err) {
      if (!(err instanceof AppStartError)) throw err;
      process.stderr.write(`Error: ${err.message}\n`);
      process.exitCode = err.status;
      return;
    } finally {
      await pio.close();
    }
    const { report, status } = result;
    // An interrupt now would cut the files short: they are written first.
    const holdOn = () => process.stderr.write('joulegate: writing the report files first\n');
    for (const sig of INTERRUPTS) process.on(sig, holdOn);
    let allWritten: boolean;
    try {
      allWritten = await writeReports(
        report,
        formats,
        config.output.data_out,
        (line) => process.stderr.write(`joulegate: ${line}\n`),
        { appFile },
      );
      if (formats.includes('text'))
        process.stdout.write((await import('../../report/text.js')).renderText(report));
    } finally {
      for (const sig of INTERRUPTS) process.off(sig, holdOn);
    }
    if (report.failed) process.stderr.write(`joulegate: ${report.failure}; partial report written\n`);
    process.exitCode = status !== 0 ? status : allWritten ? 0 : 1;
  });
}
