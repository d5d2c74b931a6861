import { hostname } from 'node:os';
import { type Command, CommanderError } from 'commander';
import { openPlatform } from '../../backends/open-platform.js';
import { errorMessage } from '../../platform/errors.js';
import type { PlatformIO } from '../../platform/platform-io.js';
import { VERSION } from '../../platform/version.js';
import type { ReportFormat, SessionConfig } from '../session/run.js';
import type { Sink } from '../session/sinks.js';

/** geopmsession is a Python argparse tool: bad option values exit 2, runtime errors 255. */
const ARGPARSE_EXIT = 2;
const RUNTIME_EXIT = 255;

class ArgumentError extends Error {}
class SessionError extends Error {}

interface RawOptions {
  version?: boolean;
  time: string;
  period: string;
  pid?: string;
  printHeader?: boolean;
  header: boolean;
  delimiter: string;
  reportOut?: string;
  traceOut: string;
  reportFormat: string;
  reportSamples?: string;
}

function floatArg(flag: string, text: string): number {
  const trimmed = text.trim();
  const value = Number(trimmed);
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(trimmed) || !Number.isFinite(value)) {
    throw new ArgumentError(`argument ${flag}: invalid float value: '${text}'`);
  }
  return value;
}

function intArg(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\s*[+-]?\d+\s*$/.test(text))
    throw new ArgumentError(`argument ${flag}: invalid int value: '${text}'`);
  return Number(text);
}

/** Option checks in geopmsession's order; returns the session settings. */
export function sessionConfigOf(opts: RawOptions): SessionConfig {
  if (opts.printHeader && !opts.header) {
    throw new ArgumentError('argument -n/--no-header: not allowed with argument --print-header');
  }
  const config: SessionConfig = {
    time: floatArg('-t/--time', opts.time),
    period: floatArg('-p/--period', opts.period),
    pid: intArg('--pid', opts.pid),
    printHeader: opts.header,
    delimiter: opts.delimiter,
    reportFormat: opts.reportFormat as ReportFormat,
    reportSamples: intArg('-s/--report-samples', opts.reportSamples),
  };
  if (config.pid !== undefined && config.pid <= 0)
    throw new SessionError(`Specified an invalid PID: ${config.pid}`);
  if (opts.reportFormat !== 'yaml' && opts.reportFormat !== 'csv') {
    throw new SessionError(`Invalid report format: ${opts.reportFormat}`);
  }
  if (config.reportSamples !== undefined && opts.traceOut === opts.reportOut) {
    throw new SessionError(
      'When using the --report-samples option the trace and report output must differ, ' +
        'use --report-out or --trace-out to specify a unique value',
    );
  }
  return config;
}

/** SIGINT/SIGTERM stop sampling; the trace is complete and the report written, exit 0. */
function stopOnSignals(): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const stop = () => controller.abort();
  const onStdoutError = (err: NodeJS.ErrnoException) => {
    // A closed pipe (`| head`) ends the session like a signal instead of crashing it.
    if (err.code === 'EPIPE') stop();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  process.stdout.on('error', onStdoutError);
  return {
    signal: controller.signal,
    release() {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      process.stdout.off('error', onStdoutError);
    },
  };
}

async function session(opts: RawOptions): Promise<void> {
  if (opts.version) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  const config = sessionConfigOf(opts);
  // Loaded only when a session runs, keeping every other command's start cheap.
  const [{ runSession }, { openSink, readRequestLines }] = await Promise.all([
    import('../session/run.js'),
    import('../session/sinks.js'),
  ]);
  let report: Sink | undefined;
  let trace: Sink | undefined;
  let pio: PlatformIO | undefined;
  let complete = false;
  try {
    report = openSink(opts.reportOut);
    trace = openSink(opts.traceOut, true);
    // The request lines are read while the platform opens, which mostly waits on the daemon.
    const reading = readRequestLines(process.stdin);
    reading.catch(() => {}); // awaited below, unless opening fails first
    try {
      pio = await openPlatform();
    } catch (err) {
      process.stdin.destroy(); // stop waiting for requests nobody will read
      throw err;
    }
    const requestLines = await reading;
    const stop = stopOnSignals();
    try {
      await runSession(config, {
        pio,
        requestLines,
        sinks: { trace: trace?.write, report: report?.write },
        host: hostname(),
        signal: stop.signal,
        warn: (line) => process.stderr.write(`joulegate session: ${line}\n`),
      });
    } finally {
      stop.release();
    }
    complete = true;
  } finally {
    try {
      trace?.close(complete);
    } finally {
      report?.close(complete);
      await pio?.close();
    }
  }
}

function usageExit(err: CommanderError): never {
  throw new CommanderError(err.exitCode === 0 ? 0 : ARGPARSE_EXIT, err.code, err.message);
}

/** `joulegate session`: geopmsession (requests on stdin, trace rows and a statistics report). */
export function register(program: Command): void {
  program
    .command('session')
    .summary('Sample signals periodically (requests on stdin), print a trace and a report')
    .description(
      'Reads requests "SIGNAL DOMAIN IDX" from stdin, one per line (IDX "*" = every index, ' +
        '"#" starts a comment, the first empty line ends the requests), then samples them: ' +
        'once, or every PERIOD seconds for TIME seconds. Compatible with geopmsession.',
    )
    .option('-v, --version', 'print the joulegate version')
    .option('-t, --time <seconds>', 'total run time of the session', '0')
    .option('-p, --period <seconds>', 'sample every PERIOD seconds (0: one sample)', '0')
    .option('--pid <pid>', 'stop when process PID ends (with no --time: sample until it ends)')
    .option('--print-header', 'print the CSV header (the default; kept for compatibility)')
    .option('-n, --no-header', 'do not print the CSV header')
    .option('-d, --delimiter <delim>', 'separator of CSV values', ',')
    .option('-r, --report-out <path>', 'write summary statistics to PATH ("-" = stdout)')
    .option('-o, --trace-out <path>', 'write the trace to PATH ("-" = stdout, /dev/null = none)', '-')
    .option('-f, --report-format <format>', 'report format: yaml or csv', 'yaml')
    .option('-s, --report-samples <n>', 'write a report every N periods')
    .exitOverride(usageExit)
    .action(async (opts: RawOptions) => {
      try {
        await session(opts);
      } catch (err) {
        if (err instanceof ArgumentError) {
          process.stderr.write(`joulegate session: error: ${err.message}\n`);
          process.exitCode = ARGPARSE_EXIT;
          return;
        }
        process.stderr.write(`Error: ${errorMessage(err)}\n\n`);
        process.exitCode = RUNTIME_EXIT;
      }
    });
}
