import { type ChildProcess, spawn } from 'node:child_process';
import { unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { timeOriginNs } from '../backends/time.js';
import { batchPaths, type ServerReport } from '../ipc/batch/protocol.js';
import { JoulegateError } from '../platform/errors.js';
import { processExists } from '../platform/process.js';
import type { BatchLauncher, BatchServerHandle, BatchStartRequest } from './batch-port.js';

export interface LauncherOptions {
  /** Where the server's complaints go (the daemon's log). */
  log?: (line: string) => void;
  /** How long a server may take to load its backends and create its files. */
  startTimeoutMs?: number;
  /** How often the launcher checks that the client process still exists. */
  clientCheckMs?: number;
}

/**
 * The batch server's start-up module (src/app/batch-server): compiled JS in dist, TypeScript under
 * tsx in tests. A path, not an import: the server runs in its own process.
 */
function serverCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  const app = join(dirname(here), '..', 'app');
  if (here.endsWith('.ts')) return ['--import', 'tsx', join(app, 'batch-server.ts')];
  return [join(app, 'batch-server.js')];
}

/**
 * Starts batch servers as child processes of the daemon (GEOPM forks geopmd; a fresh Node
 * process is our equivalent, with its own PlatformIO). The key is the client's pid, as in GEOPM.
 * Resolves once the server has created its buffers and FIFOs, so the client can connect.
 */
export class BatchServerLauncher implements BatchLauncher {
  private readonly log: (line: string) => void;
  private readonly startTimeoutMs: number;
  private readonly clientCheckMs: number;

  constructor(options: LauncherOptions = {}) {
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.startTimeoutMs = options.startTimeoutMs ?? 30_000;
    this.clientCheckMs = options.clientCheckMs ?? 1000;
  }

  async start(req: BatchStartRequest): Promise<BatchServerHandle> {
    if (req.signals.length === 0 && req.controls.length === 0) {
      throw new JoulegateError('Requested a batch server, but no signals or controls were specified');
    }
    const key = String(req.clientPid);
    const child = spawn(process.execPath, serverCommand(), { stdio: ['pipe', 'pipe', 'pipe'] });
    // A server killed by a signal cannot unlink its files; the launcher does it for it.
    const cleanup = () => {
      for (const path of batchPaths(req.runDir, key)) {
        try {
          unlinkSync(path);
        } catch {
          // already removed by the server
        }
      }
    };
    // Before it is ready the server cleans up after itself: a file already there under its
    // key (O_EXCL refused it) is not the launcher's to remove.
    let ready = false;
    const exited = new Promise<void>((resolve) => {
      child.on('exit', () => {
        if (ready) cleanup();
        resolve();
      });
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (text: string) => {
      for (const line of text.split('\n')) if (line) this.log(`batch server ${child.pid}: ${line}`);
    });
    child.stdin!.on('error', () => {}); // a server that died at once is reported below
    child.stdin!.end(
      JSON.stringify({
        runDir: req.runDir,
        key,
        clientUid: req.clientUid,
        clientGid: req.clientGid,
        signals: req.signals,
        controls: req.controls,
        parentPid: process.pid,
        timeOriginNs: String(timeOriginNs()),
      }),
    );

    try {
      await this.waitReady(child);
      ready = true;
    } catch (err) {
      child.kill('SIGKILL');
      await exited;
      throw err;
    }

    const stop = async () => {
      clearInterval(watch);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 2000);
        await exited;
        clearTimeout(killer);
      }
      await exited;
    };
    // The daemon also closes sessions of dead clients; this makes the server's lifetime safe
    // on its own, e.g. when the client dies before connecting and the server waits in open().
    const watch = setInterval(() => {
      if (!processExists(req.clientPid)) {
        this.log(`batch client ${req.clientPid} terminated; stopping batch server ${child.pid}`);
        void stop();
      }
    }, this.clientCheckMs);
    watch.unref();
    void exited.then(() => clearInterval(watch));
    return { serverPid: child.pid!, serverKey: key, stop, exited };
  }

  private waitReady(child: ChildProcess): Promise<void> {
    return new Promise((resolve, reject) => {
      let out = '';
      const timer = setTimeout(
        () => reject(new JoulegateError(`batch server did not start within ${this.startTimeoutMs} ms`)),
        this.startTimeoutMs,
      );
      const done = (err?: Error) => {
        clearTimeout(timer);
        child.stdout!.removeAllListeners('data');
        child.removeListener('exit', onExit);
        if (err) reject(err);
        else resolve();
      };
      const onExit = (code: number | null, signal: string | null) =>
        done(new JoulegateError(`batch server exited before it was ready (${signal ?? `status ${code}`})`));
      child.on('exit', onExit);
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (text: string) => {
        out += text;
        const nl = out.indexOf('\n');
        if (nl < 0) return;
        let report: ServerReport;
        try {
          report = JSON.parse(out.slice(0, nl)) as ServerReport;
        } catch {
          done(new JoulegateError(`batch server wrote an unexpected line: ${out.slice(0, nl)}`));
          return;
        }
        if ('error' in report) done(new JoulegateError(`batch server could not start: ${report.error}`));
        else done();
      });
    });
  }
}
