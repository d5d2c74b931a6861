import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable } from 'node:stream';
import { JoulegateError } from '../platform/errors.js';
import { REGION_FD_ENV, RegionEventDecoder } from './channel.js';
import { clockMs } from './clock.js';
import type { RegionEvent } from './regions-pairing.js';

/** The app could not be started; `status` is the shell's convention (127 not found, 126 not executable). */
export class AppStartError extends JoulegateError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface AppExit {
  /** The status the monitor passes on: the app's code, or 128 + signal number. */
  status: number;
  code: number;
  signal: string;
}

export interface AppRun {
  /** Shared-clock ms when the app was started. */
  startMs: number;
  stopMs: number;
  exit: AppExit;
  events: RegionEvent[];
  problems: string[];
}

/** fd number the region channel gets in the app. */
const REGION_FD = 3;
const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export function exitStatus(code: number | null, signal: NodeJS.Signals | null): AppExit {
  if (signal) return { status: 128 + (constants.signals[signal] ?? 0), code: -1, signal };
  return { status: code ?? 1, code: code ?? 1, signal: '' };
}

/**
 * Runs the app with inherited stdio and the region channel, forwards SIGINT/SIGTERM/SIGHUP to
 * it while it runs, and resolves when it exits. `onInterrupt` learns that the user asked to stop.
 */
export function runApp(
  command: string[],
  originMs: number,
  onStart: () => void,
  onInterrupt: (signal: NodeJS.Signals) => void,
): Promise<AppRun> {
  return new Promise((resolve, reject) => {
    const decoder = new RegionEventDecoder(originMs);
    const startMs = clockMs();
    const child = spawn(command[0]!, command.slice(1), {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      env: { ...process.env, [REGION_FD_ENV]: String(REGION_FD) },
    });
    const channel = child.stdio[REGION_FD] as Readable;
    channel.setEncoding('utf8');
    channel.on('data', (chunk: string) => decoder.push(chunk));
    channel.on('error', () => {});
    const forward = (sig: NodeJS.Signals) => {
      onInterrupt(sig);
      child.kill(sig);
    };
    for (const s of FORWARDED) process.on(s, forward);
    const cleanup = () => {
      for (const s of FORWARDED) process.off(s, forward);
    };
    child.once('spawn', onStart);
    child.once('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      const why =
        err.code === 'ENOENT'
          ? 'command not found'
          : err.code === 'EACCES'
            ? 'permission denied'
            : err.message;
      reject(new AppStartError(`cannot run ${command[0]}: ${why}`, err.code === 'ENOENT' ? 127 : 126));
    });
    child.once('exit', (code, signal) => {
      const stopMs = clockMs();
      cleanup();
      // Events written just before exit may still be in the pipe: drain it, but do not wait for
      // grandchildren that inherited the channel and keep it open.
      const done = () => {
        clearTimeout(timer);
        channel.destroy();
        resolve({
          startMs,
          stopMs,
          exit: exitStatus(code, signal),
          events: decoder.events,
          problems: decoder.problems,
        });
      };
      const timer = setTimeout(done, 200);
      if (channel.readableEnded) done();
      else channel.once('end', done);
    });
  });
}
