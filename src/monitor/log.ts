import { appendFileSync } from 'node:fs';
import { LOG_LEVELS } from './config/schema.js';

export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warning(message: string): void;
  error(message: string): void;
  /** Whether a message at this level would be written (to skip building costly ones). */
  enabled(level: LogLevel): boolean;
}

export interface LoggerOptions {
  /** Messages below this level are dropped (`[debug] log_lvl`). */
  level: LogLevel;
  /** Append to this file instead of standard error (`[debug] log_file`; '' = stderr). */
  file?: string;
  /** Where lines go without a file (tests pass their own). */
  stderr?: (line: string) => void;
  now?: () => Date;
}

/**
 * The monitor's diagnostics: one line per message, `<ISO time> joulegate <LEVEL>: <message>`,
 * to standard error or appended to `log_file` (which then replaces standard error, as in perun).
 * Written synchronously: the lines matter most when the process is about to end badly.
 */
export function createLogger(options: LoggerOptions): Logger {
  const threshold = LOG_LEVELS.indexOf(options.level);
  const now = options.now ?? (() => new Date());
  const file = options.file ?? '';
  const toStderr = options.stderr ?? ((line: string) => process.stderr.write(line));
  let fileBroken = false;
  const write = (level: LogLevel, message: string) => {
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    const line = `${now().toISOString()} joulegate ${level}: ${message}\n`;
    if (file === '' || fileBroken) return toStderr(line);
    try {
      appendFileSync(file, line);
    } catch (err) {
      // A log file that cannot be written must not hide the messages or stop the measurement.
      fileBroken = true;
      toStderr(`joulegate: cannot write log file ${file} (${(err as Error).message}); logging to stderr\n`);
      toStderr(line);
    }
  };
  return {
    debug: (m) => write('DEBUG', m),
    info: (m) => write('INFO', m),
    warning: (m) => write('WARNING', m),
    error: (m) => write('ERROR', m),
    enabled: (level) => LOG_LEVELS.indexOf(level) >= threshold,
  };
}

/** A logger that drops everything (library use without a configuration). */
export const SILENT: Logger = {
  debug: () => {},
  info: () => {},
  warning: () => {},
  error: () => {},
  enabled: () => false,
};
