import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { delimiter } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { JoulegateError } from '../platform/errors.js';
import { REGION_FD_ENV, RegionEventDecoder } from './channel.js';
import { clockMs } from './clock.js';
import type { AppExit, RegionEvent } from './model/report-model.js';

/** The app could not be started; `status` is the shell's convention (127 not found, 126 not executable). */
export class AppStartError extends JoulegateError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
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

/**
 * The package's Python regions client (python/joulegate), two levels above this module both
 * as dist/monitor/run-app.js and bundled as dist/app/joulegate.cjs.
 */
export const PYTHON_CLIENT_DIR = fileURLToPath(new URL('../../python', import.meta.url));

/** The app's environment: the region channel, and `import joulegate` ahead of the user's PYTHONPATH. */
function appEnv(): NodeJS.ProcessEnv {
  const pythonPath = [PYTHON_CLIENT_DIR, process.env.PYTHONPATH].filter(Boolean).join(delimiter);
  return { ...process.env, [REGION_FD_ENV]: String(REGION_FD), PYTHONPATH: pythonPath };
}
const INTERRUPTS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export function exitStatus(code: number | null, signal: NodeJS.Signals | null): AppExit {
  if (signal) return { status: 128 + (constants.signals[signal] ?? 0), code: -1, signal };
  return { status: code ?? 1, code: code ?? 1, signal: '' };
}

/** Fields 3… of /proc/<pid>/stat (state, ppid, pgrp, session, tty_nr, tpgid, …), or undefined. */
function procStat(pid: number | 'self'): number[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and ')': the fields start after the last ')'.
    return stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
  } catch {
    return undefined;
  }
}

/**
 * Whether a SIGINT or SIGHUP the monitor got came from its terminal to the app as well: the
 * terminal signals its whole foreground process group, and the app shares it when the monitor
 * and the app are both in it. A signal sent to the monitor alone (`kill -INT <pid>`, a batch
 * system) cannot be told apart from the terminal's while the monitor is in the foreground of one;
 * outside that it is passed on.
 */
function terminalSignalsApp(appPid: number): boolean {
  const self = procStat('self');
  const app = procStat(appPid);
  if (!self || !app) return false;
  // Index 2: pgrp, 4: tty_nr, 5: tpgid (the terminal's foreground process group, -1 for none).
  const foreground = self[5]!;
  return foreground > 0 && self[2] === foreground && app[2] === foreground && app[4] === self[4];
}

/**
 * What the monitor does with interrupts while the app runs: the first is passed on (unless the
 * terminal delivered it to the app already), the second sends SIGTERM, the third and later
 * SIGKILL, each announced. The app so gets exactly one SIGINT per Ctrl-C, and one that ignores
 * them can still be stopped.
 */
class InterruptRelay {
  private count = 0;

  constructor(
    private readonly child: ChildProcess,
    private readonly announce: (line: string) => void,
  ) {}

  handle(sig: NodeJS.Signals): void {
    this.count++;
    if (this.child.pid === undefined || this.child.exitCode !== null || this.child.signalCode !== null)
      return;
    if (this.count === 1) {
      const fromTerminal = sig !== 'SIGTERM' && terminalSignalsApp(this.child.pid);
      if (!fromTerminal) this.child.kill(sig);
      // A hang-up has taken the terminal away: nobody to tell.
      if (sig !== 'SIGHUP')
        this.announce(
          `${sig}: ${fromTerminal ? 'the app got it from the terminal' : `passed ${sig} on to the app`}; ` +
            'waiting for it to exit (interrupt again to send SIGTERM)',
        );
    } else if (this.count === 2) {
      this.child.kill('SIGTERM');
      this.announce('second interrupt: sent SIGTERM to the app (interrupt again to send SIGKILL)');
    } else {
      this.child.kill('SIGKILL');
      this.announce('third interrupt: sent SIGKILL to the app');
    }
  }
}

export interface RunAppHooks {
  /** The user asked to stop (the first interrupt, and every one after). */
  onInterrupt: (signal: NodeJS.Signals) => void;
  /** One line for the user about what was done with an interrupt. */
  announce: (line: string) => void;
  /** The app's process exists (before it can have used much CPU). */
  onSpawn?: (pid: number) => void;
}

/**
 * Runs the app with inherited stdio and the region channel, relays SIGINT/SIGTERM/SIGHUP to it
 * while it runs (InterruptRelay), and resolves when it exits.
 */
export function runApp(command: string[], originMs: number, hooks: RunAppHooks): Promise<AppRun> {
  return new Promise((resolve, reject) => {
    const decoder = new RegionEventDecoder(originMs);
    const startMs = clockMs();
    const child = spawn(command[0]!, command.slice(1), {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      env: appEnv(),
    });
    if (child.pid !== undefined) hooks.onSpawn?.(child.pid);
    const channel = child.stdio[REGION_FD] as Readable;
    channel.setEncoding('utf8');
    channel.on('data', (chunk: string) => decoder.push(chunk));
    channel.on('error', () => {});
    const relay = new InterruptRelay(child, hooks.announce);
    const forward = (sig: NodeJS.Signals) => {
      hooks.onInterrupt(sig);
      relay.handle(sig);
    };
    for (const s of INTERRUPTS) process.on(s, forward);
    const cleanup = () => {
      for (const s of INTERRUPTS) process.off(s, forward);
    };
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
