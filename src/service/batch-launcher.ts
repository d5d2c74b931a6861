import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, unlinkSync } from 'node:fs';
import type { Socket } from 'node:net';
import { availableParallelism, setPriority } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TIME_ORIGIN_ENV, timeOriginNs } from '../backends/time.js';
import { ADMIT_LINE, batchPaths, type ServerReport, serverStartLine } from '../ipc/batch/protocol.js';
import { errorMessage, JoulegateError } from '../platform/errors.js';
import { processExists } from '../platform/process.js';
import type { BatchLauncher, BatchServerHandle, BatchServerLimits, BatchStartRequest } from './batch-port.js';
import { DEFAULT_BATCH_SETTINGS } from './batch-settings.js';

export interface LauncherOptions {
  /** Where the servers' complaints and their exits go (the daemon's log). */
  log?: (line: string) => void;
  /** How long a server may take to load its backends, and then to create its files. */
  startTimeoutMs?: number;
  /** How often the launcher checks that the client process still exists. */
  clientCheckMs?: number;
  /** A server whose client has not connected this long after admit() is stopped. */
  idleTimeoutMs?: number;
  /** Servers kept loaded ahead of requests, so a start only pushes and creates files (0: none). */
  spares?: number;
  /** Most spares the pool grows to while starts come in faster than one spare can follow. */
  maxSpares?: number;
  /** The window over which the pool counts starts (DEMAND_WINDOW_MS). */
  demandWindowMs?: number;
  /** Clients one process serves in turn (kept for their uid between them) before it is let go. */
  clientsPerServer?: number;
  /** Most server processes loading at once: a storm of starts queues here, not for the CPU. */
  maxLoading?: number;
  /** Refusal limits and admission, enforced by the daemon (BatchServers); defaults for the rest. */
  limits?: Partial<BatchServerLimits>;
}

/**
 * V8 settings of a server: a 1 MiB young generation (instead of 16) keeps the pages a batch
 * touches few and warm, and GC on the main thread spares the wake-ups of helper threads.
 */
const SERVER_NODE_FLAGS = ['--max-semi-space-size=1', '--single-threaded'];

/**
 * Nice value of a spare while it loads ahead of any request: spares then take spare CPU, not the
 * daemon's (whose other clients must not wait). A server a client waits for runs at 0: a spare
 * is set back the moment a client claims it, loaded or not, and a server started for a waiting
 * client is never lowered (at nice 10 on a node whose cores are all busy it could take minutes
 * to load). Only a root daemon can set it back, so only a root daemon lowers it.
 */
const LOADING_NICE = process.getuid?.() === 0 ? 10 : 0;

/** Sets a process's nice value (of its main thread, the one that serves); best effort. */
function renice(pid: number, nice: number): void {
  try {
    setPriority(pid, nice);
  } catch {
    // the process is gone; its end is reported elsewhere
  }
}

/** A server loading (or loaded) ahead of requests; `claimed` once a client waits for it. */
interface Spare {
  loaded: Promise<ServerProcess>;
  process?: ServerProcess;
  claimed: boolean;
  /** Let go by the pool (trim): it is not started if it has not been yet. */
  released?: boolean;
  /** A server kept for its uid is let go when this fires (no start of that uid came). */
  expiry?: NodeJS.Timeout;
  /** Loaded: it reported `idle`. */
  ready?: boolean;
}

/**
 * The claimed spare's server once loaded, held by the daemon from now on; undefined if it failed
 * to load (that was logged, and a new process reports the reason to the caller) or has ended.
 */
async function usable(spare: Spare): Promise<ServerProcess | undefined> {
  try {
    const server = await spare.loaded;
    if (!server.running) return undefined;
    server.setReferenced(true);
    return server;
  } catch {
    return undefined;
  }
}

/**
 * How long PlatformStopBatch waits for a connected server that is letting its client go (the
 * client quit or closed, and the server's `released` report is on its way) before it ends the
 * process instead: a client's `q` is answered only after the report is written, so it nearly
 * always arrives first; this covers the daemon reading the two pipes in the other order.
 */
const RELEASE_GRACE_MS = 25;

let command: string[] | undefined;
/**
 * The server's entry module: the one-file bundle in dist (scripts/bundle-cli.mjs; a quarter less
 * memory and start time than ~150 modules), else the compiled module, or the TypeScript source
 * under tsx in tests. A path, not an import: the server runs in its own process.
 */
function serverCommand(): string[] {
  if (command) return command;
  const here = fileURLToPath(import.meta.url);
  const app = join(dirname(here), '..', 'app');
  const bundle = join(app, 'batch-server.cjs');
  if (here.endsWith('.ts')) command = ['--import', 'tsx', join(app, 'batch-server.ts')];
  else command = [existsSync(bundle) ? bundle : join(app, 'batch-server.js')];
  return command;
}

/**
 * The window over which the pool counts starts: it holds as many spares as there were starts in
 * the last this many ms (between `spares` and `maxSpares`), and lets the extra ones go once
 * that many ms pass with fewer starts.
 */
const DEMAND_WINDOW_MS = 2000;

/** Longest report line kept, and most reports waiting to be read. */
const MAX_REPORT_CHARS = 64 * 1024;
const MAX_PENDING_REPORTS = 4;

/** One batch server process and the lines it reports on stdout. */
class ServerProcess {
  readonly child: ChildProcess;
  /** Resolves with how the process ended, e.g. "exit status 0" or "killed by SIGBUS". */
  readonly ended: Promise<string>;
  private readonly reports: ServerReport[] = [];
  private wake?: () => void;
  private endedHow?: string;
  /** Clients handed this process so far. */
  served = 0;

  constructor(log: (line: string) => void, referenced: boolean, nice: number) {
    // The daemon's TIME origin: D-Bus and batch reads of TIME share one clock.
    const env = { ...process.env, [TIME_ORIGIN_ENV]: String(timeOriginNs()) };
    this.child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...serverCommand()], { stdio: 'pipe', env });
    // Right after exec, before Node starts its threads (they inherit it).
    if (nice !== 0 && this.child.pid !== undefined) renice(this.child.pid, nice);
    this.ended = new Promise((resolve) => {
      const end = (how: string) => {
        if (this.endedHow !== undefined) return;
        this.endedHow = how;
        this.wake?.();
        resolve(how);
      };
      // 'close', not 'exit': its last stderr lines (why it ended) are logged by then.
      this.child.on('close', (code, signal) => end(signal ? `killed by ${signal}` : `exit status ${code}`));
      this.child.on('error', (err) => end(`could not be started (${errorMessage(err)})`));
    });
    this.child.stdin!.on('error', () => {}); // a server that died is reported by `ended`
    let out = '';
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (text: string) => {
      // A server has a few short lines to say; more is not stored (the daemon's memory is not
      // the server's to fill).
      out = (out + text).slice(-MAX_REPORT_CHARS);
      for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        if (this.reports.length >= MAX_PENDING_REPORTS) continue;
        try {
          this.reports.push(JSON.parse(line) as ServerReport);
        } catch {
          this.reports.push({ error: `unexpected line from the server: ${line.slice(0, 200)}` });
        }
        this.wake?.();
      }
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (text: string) => {
      for (const line of text.split('\n')) if (line) log(`batch server ${this.child.pid}: ${line}`);
    });
    this.setReferenced(referenced);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.endedHow === undefined;
  }

  /** The next report; rejects when the process ends first or `timeoutMs` passes. */
  async nextReport(doing: string, timeoutMs?: number): Promise<ServerReport> {
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    for (;;) {
      const report = this.reports.shift();
      if (report) return report;
      if (this.endedHow !== undefined) {
        throw new JoulegateError(
          `batch server ${this.pid} ended before it could ${doing} (${this.endedHow})`,
        );
      }
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new JoulegateError(`batch server ${this.pid} did not ${doing} within ${timeoutMs} ms`);
      }
      await new Promise<void>((resolve) => {
        const timer = deadline === undefined ? undefined : setTimeout(resolve, deadline - Date.now());
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  /** Lets a spare go: it sees the end of its stdin, no request, and exits with status 0. */
  release(): void {
    this.child.stdin!.end();
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** A spare must not keep a test or bench process alive; a server in use must. */
  setReferenced(referenced: boolean): void {
    const handles = [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as (
      | Socket
      | ChildProcess
    )[];
    for (const h of handles)
      if (referenced) h.ref();
      else h.unref();
  }
}

/**
 * Starts batch servers as child processes of the daemon (GEOPM forks geopmd; a Node process of
 * our own with its own PlatformIO is our equivalent), one per client, keyed by the client's pid
 * as in GEOPM. `spares` servers are kept loaded ahead of requests, so a start only has the
 * server push the request and create its files. Every server's end is logged with its cause.
 */
export class BatchServerLauncher implements BatchLauncher {
  readonly limits: BatchServerLimits;
  private readonly log: (line: string) => void;
  private readonly startTimeoutMs: number;
  private readonly clientCheckMs: number;
  private readonly idleTimeoutMs: number;
  private readonly minSpares: number;
  private readonly maxSpares: number;
  /** When the starts of the last DEMAND_WINDOW_MS came (oldest first). */
  private readonly recentStarts: number[] = [];
  private trimTimer?: NodeJS.Timeout;
  private readonly demandWindowMs: number;
  private readonly maxLoading: number;
  private readonly spares: Spare[] = [];
  /** Set when a spare failed to load: no more spares until a server loads again. */
  private sparesFailing = false;
  private loading = 0;
  /** Loads waiting for a place among `maxLoading`; spares nobody has claimed go last. */
  private readonly loadQueue: { spare?: Spare; go: () => void }[] = [];
  /**
   * Servers that served a client and are kept, loaded afresh, for the next start of the same
   * uid (never another's), by uid; at most `keptPerUser` each and `keptInAll` in all.
   */
  private readonly kept = new Map<number, Spare[]>();
  private keptCount = 0;
  private readonly keptPerUser: number;
  private readonly keptInAll: number;
  private readonly clientsPerServer: number;

  constructor(options: LauncherOptions = {}) {
    const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.log = (line) => log(`joulegated: ${line}`);
    this.startTimeoutMs = options.startTimeoutMs ?? 30_000;
    this.clientCheckMs = options.clientCheckMs ?? 1000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_BATCH_SETTINGS.idleTimeoutMs;
    this.demandWindowMs = options.demandWindowMs ?? DEMAND_WINDOW_MS;
    this.minSpares = options.spares ?? DEFAULT_BATCH_SETTINGS.spares;
    // No spares (0) means no pool at all: each start loads its own process.
    const most = options.maxSpares ?? DEFAULT_BATCH_SETTINGS.maxSpares;
    this.maxSpares = this.minSpares === 0 ? 0 : Math.max(this.minSpares, most);
    this.maxLoading = options.maxLoading ?? availableParallelism();
    // The same memory bound as the pool's: a spare's worth per uid, four in all by default.
    this.keptPerUser = this.maxSpares === 0 ? 0 : this.maxSpares;
    this.keptInAll = 4 * this.maxSpares;
    this.clientsPerServer = options.clientsPerServer ?? DEFAULT_BATCH_SETTINGS.clientsPerServer;
    const { perUser, total, startsAtOnce, startTimeoutMs } = { ...DEFAULT_BATCH_SETTINGS, ...options.limits };
    this.limits = { perUser, total, startsAtOnce: startsAtOnce || this.maxLoading, startTimeoutMs };
  }

  /** Loads the spares now rather than at the first start (the daemon calls this once it is up). */
  warm(): void {
    this.refill();
  }

  async start(
    req: BatchStartRequest,
    answered: Promise<void> = Promise.resolve(),
  ): Promise<BatchServerHandle> {
    if (req.signals.length === 0 && req.controls.length === 0) {
      throw new JoulegateError('Requested a batch server, but no signals or controls were specified');
    }
    this.noteStart();
    const server = await this.take(req.clientUid);
    server.served++;
    if (LOADING_NICE !== 0) renice(server.pid, 0);
    const key = String(req.clientPid);
    try {
      server.send(
        serverStartLine({
          runDir: req.runDir,
          key,
          clientUid: req.clientUid,
          clientGid: req.clientGid,
          signals: req.signals,
          controls: req.controls,
        }),
      );
      const report = await server.nextReport('create its files', this.startTimeoutMs);
      if ('error' in report) throw new JoulegateError(`batch server could not start: ${report.error}`);
      if (!('ready' in report))
        throw new JoulegateError(`batch server ${server.pid} reported ${JSON.stringify(report)}`);
    } catch (err) {
      // Before it is ready the server cleans up after itself: a file already there under its
      // key (O_EXCL refused it) is not the launcher's to remove.
      server.kill('SIGKILL');
      await server.ended;
      throw err;
    } finally {
      // The next spare is spawned once this start is answered: spawn() holds the event loop
      // for a few ms (a fork of the daemon) and the new process's start-up takes CPU, which
      // the reply and the session record written meanwhile need not share: with the spawn
      // right after the hand-out, PlatformStartBatch took 15-19 ms instead of ~9 (bench/batch.ts).
      void answered.then(() => setImmediate(() => this.refill()));
    }
    return this.handle(server, req, key);
  }

  /**
   * A loaded server for a request of `uid`: one kept from a client of the same uid, else the
   * oldest spare, else a new process.
   */
  private async take(uid: number): Promise<ServerProcess> {
    for (let own = this.takeKept(uid); own; own = this.takeKept(uid)) {
      const server = await usable(own);
      if (server) return server;
    }
    const spare = this.spares.shift();
    if (spare) {
      spare.claimed = true;
      if (spare.process && LOADING_NICE !== 0) renice(spare.process.pid, 0);
      const server = await usable(spare);
      if (server) return server;
    }
    return this.spawnLoaded(true);
  }

  /**
   * A server whose client quit or went away: it loads a fresh PlatformIO and waits for the next
   * start of the same uid, for DEMAND_WINDOW_MS; beyond the bounds (`clientsPerServer` clients
   * served: a bound on whatever a long-lived process might gather), or unused by then, it is let
   * go (stdin closed: it exits with status 0). A client of another uid never gets it: a process
   * that served one user never serves another.
   */
  private keep(server: ServerProcess, uid: number): void {
    const own = this.kept.get(uid) ?? [];
    if (
      own.length >= this.keptPerUser ||
      this.keptCount >= this.keptInAll ||
      server.served >= this.clientsPerServer
    ) {
      server.release();
      return;
    }
    server.setReferenced(false);
    const spare: Spare = {
      claimed: false,
      process: server,
      loaded: server.nextReport('load afresh', this.startTimeoutMs).then((report) => {
        if (!('idle' in report))
          throw new JoulegateError(`batch server ${server.pid} reported ${JSON.stringify(report)}`);
        return server;
      }),
    };
    own.push(spare);
    this.kept.set(uid, own);
    this.keptCount++;
    const letGo = (why?: string) => {
      if (!this.unkeep(uid, spare)) return;
      if (why) this.log(`kept batch server ${server.pid} of uid ${uid} ${why}`);
      server.release();
    };
    spare.loaded.then(
      () => {},
      (err) => {
        if (!server.running) return; // its end is told below
        letGo(`could not load afresh: ${errorMessage(err)}`);
        server.kill('SIGKILL');
      },
    );
    void server.ended.then((how) => letGo(how));
    spare.expiry = setTimeout(() => letGo(), this.demandWindowMs);
    spare.expiry.unref();
  }

  /** Removes `spare` from the servers kept for `uid`; false if it was not there (any more). */
  private unkeep(uid: number, spare: Spare): boolean {
    const own = this.kept.get(uid);
    const i = own?.indexOf(spare) ?? -1;
    if (i < 0) return false;
    own!.splice(i, 1);
    if (own!.length === 0) this.kept.delete(uid);
    this.keptCount--;
    clearTimeout(spare.expiry);
    return true;
  }

  /** The oldest server kept for `uid`, claimed. */
  private takeKept(uid: number): Spare | undefined {
    const spare = this.kept.get(uid)?.[0];
    if (!spare) return undefined;
    this.unkeep(uid, spare);
    spare.claimed = true;
    return spare;
  }

  /** Spares in the pool (loading or loaded) and servers kept for their uid, for tests and logs. */
  get pool(): { spares: number; kept: number } {
    return { spares: this.spares.length, kept: this.keptCount };
  }

  /**
   * Spares to hold now: one per start in the last DEMAND_WINDOW_MS, at least `spares` and at
   * most `maxSpares`. A burst of starts grows the pool as it comes, so the starts that follow
   * find servers loaded (or already loading) instead of each waiting for a process of its own.
   */
  private spareTarget(now = Date.now()): number {
    while (this.recentStarts.length > 0 && now - this.recentStarts[0]! >= this.demandWindowMs)
      this.recentStarts.shift();
    return Math.min(this.maxSpares, Math.max(this.minSpares, this.recentStarts.length));
  }

  /** Counts a start toward the pool's size; the extra spares go once the window has passed. */
  private noteStart(): void {
    const now = Date.now();
    this.recentStarts.push(now);
    if (this.recentStarts.length > this.maxSpares) this.recentStarts.shift();
    clearTimeout(this.trimTimer);
    this.trimTimer = setTimeout(() => this.trim(), this.demandWindowMs + 10);
    this.trimTimer.unref();
  }

  /**
   * Lets the spares over the target go, the newest first (the oldest have loaded): a loaded one
   * sees its stdin close and exits; one still loading is ended at once rather than left to
   * finish a load nobody needs (on a busy node, at nice 10, that can take long).
   */
  private trim(): void {
    const target = this.spareTarget();
    while (this.spares.length > target) {
      const spare = this.spares.pop()!;
      spare.released = true;
      if (spare.ready) spare.process?.release();
      else spare.process?.kill('SIGTERM');
    }
  }

  /** Keeps the target number of spares (spareTarget) loading or loaded ahead of requests. */
  private refill(): void {
    const target = this.spareTarget();
    while (!this.sparesFailing && this.spares.length < target) {
      const spare: Spare = { claimed: false } as Spare;
      spare.loaded = this.spawnLoaded(false, spare);
      this.spares.push(spare);
      spare.loaded.then(
        (server) => {
          spare.ready = true;
          void server.ended.then((how) => {
            const i = this.spares.indexOf(spare);
            if (i < 0) return; // handed out
            this.spares.splice(i, 1);
            this.log(`spare batch server ${server.pid} ${how}`);
          });
        },
        (err) => {
          if (spare.released) return; // let go before it was started
          const i = this.spares.indexOf(spare);
          if (i >= 0) this.spares.splice(i, 1);
          this.sparesFailing = true;
          this.log(`spare batch server failed to load: ${errorMessage(err)}`);
        },
      );
    }
  }

  /** A new server process, once its backends are loaded (it then waits for a request). */
  private async spawnLoaded(referenced: boolean, spare?: Spare): Promise<ServerProcess> {
    while (this.loading >= this.maxLoading)
      await new Promise<void>((go) => this.loadQueue.push({ spare, go }));
    if (spare?.released) {
      this.nextLoad();
      throw new JoulegateError('spare no longer needed');
    }
    this.loading++;
    const server = new ServerProcess(this.log, referenced, spare && !spare.claimed ? LOADING_NICE : 0);
    if (spare) spare.process = server;
    try {
      const report = await server.nextReport('load its backends', this.startTimeoutMs);
      if ('error' in report) throw new JoulegateError(`batch server could not start: ${report.error}`);
      if (!('idle' in report))
        throw new JoulegateError(`batch server ${server.pid} reported ${JSON.stringify(report)}`);
      this.sparesFailing = false;
      return server;
    } catch (err) {
      server.kill('SIGKILL');
      throw err;
    } finally {
      this.loading--;
      this.nextLoad();
    }
  }

  /**
   * Lets the next load go: one a client waits for (its own process, or a spare it claimed)
   * before any spare loading ahead of demand, so a growing pool never delays a waiting start.
   */
  private nextLoad(): void {
    const i = this.loadQueue.findIndex((w) => !w.spare || w.spare.claimed);
    this.loadQueue.splice(Math.max(i, 0), 1)[0]?.go();
  }

  private handle(server: ServerProcess, req: BatchStartRequest, key: string): BatchServerHandle {
    const serverPid = server.pid;
    const client = req.clientPid;
    let connected = false;
    let releasedWhy: string | undefined;
    let onReleased = () => {};
    const released = new Promise<void>((resolve) => {
      onReleased = resolve;
    });
    // Done with this client: the process ended, or it let the client go and is the pool's again.
    const exited = Promise.race([server.ended, released]).then((how) => {
      if (releasedWhy !== undefined) {
        this.log(`batch server ${serverPid} of client ${client} released (${releasedWhy})`);
        this.keep(server, req.clientUid);
        return;
      }
      this.log(`batch server ${serverPid} of client ${client} ended: ${how}`);
      // A server killed by a signal cannot unlink its files; the launcher does it for it.
      for (const path of batchPaths(req.runDir, key)) {
        try {
          unlinkSync(path);
        } catch {
          // already removed by the server
        }
      }
    });
    let idleTimer: NodeJS.Timeout | undefined;
    const stop = async () => {
      clearInterval(watch);
      clearTimeout(idleTimer);
      if (connected && releasedWhy === undefined && server.running) {
        // The client may have just quit: its server's `released` may still be in the pipe.
        await Promise.race([exited, new Promise((r) => setTimeout(r, RELEASE_GRACE_MS))]);
      }
      if (releasedWhy === undefined && server.running) {
        server.kill('SIGTERM');
        const killer = setTimeout(() => server.kill('SIGKILL'), 2000);
        await server.ended;
        clearTimeout(killer);
      }
      await exited;
    };
    const stopBecause = (why: string) => {
      if (!server.running || releasedWhy !== undefined) return;
      this.log(`stopping batch server ${serverPid}: ${why}`);
      void stop();
    };
    const admit = () => {
      if (!server.running || idleTimer) return;
      server.send(ADMIT_LINE);
      idleTimer = setTimeout(
        () => stopBecause(`client ${client} did not connect within ${this.idleTimeoutMs / 1000} s`),
        this.idleTimeoutMs,
      );
      void server
        .nextReport('see its client')
        .then((report) => {
          clearTimeout(idleTimer);
          if (!('connected' in report)) return;
          connected = true;
          return server.nextReport('serve its client').then((end) => {
            if (!('released' in end)) return;
            releasedWhy = end.sampling === undefined ? end.released : `${end.released}; ${end.sampling}`;
            onReleased();
          });
        })
        .catch(() => {});
    };
    // The daemon also closes sessions of dead clients; this makes the server's lifetime safe
    // on its own, e.g. when the client dies before connecting. A connected server sees its
    // client's end itself (end of stream) and lets it go: it gets one more check period for
    // that before it is stopped.
    let clientGone = false;
    const watch = setInterval(() => {
      if (processExists(client)) return;
      if (clientGone) stopBecause(`client ${client} terminated`);
      clientGone = true;
    }, this.clientCheckMs);
    watch.unref();
    void exited.then(() => {
      clearInterval(watch);
      clearTimeout(idleTimer);
    });
    return { serverPid, serverKey: key, admit, stop, exited };
  }
}
