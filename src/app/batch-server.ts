/**
 * Entry point of a batch server process, started by the daemon's launcher
 * (src/service/batch-launcher.ts), usually ahead of any request. It builds its own PlatformIO
 * (built-in backends and plugins: GPU libraries do not survive being shared across processes),
 * reports `idle` and waits on stdin for a request. Given one, it pushes it, creates the files and
 * reports `ready`; once the daemon has recorded it (`admit`) it lets the client connect, reports
 * `connected` and serves the client (messages: src/ipc/batch/protocol.ts). When the client quits
 * or goes away it reports `released`, builds a fresh PlatformIO and reports `idle` again: the
 * launcher may hand it the next request of a client of the same uid, or close its stdin.
 * Exit status 0: the daemon let go of the server (before its client connected, or while it was
 * idle), or the client ended in a way that does not release the server (an unknown message);
 * 1: the request could not be served.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { loadPlatform } from '../backends/load.js';
import { loadPlugins } from '../backends/plugins.js';
import { preadThroughLibc } from '../backends/polled-file.js';
import { adoptTimeOrigin, TIME_ORIGIN_ENV } from '../backends/time.js';
import { loadNativeLoop } from '../batch/native-loop.js';
import { type BatchIO, BatchServer } from '../batch/server.js';
import {
  ADMIT_LINE,
  parseServerStart,
  type ServerReport,
  type ServerStart,
  serverStartLine,
} from '../ipc/batch/protocol.js';
import { errorMessage } from '../platform/errors.js';
import { libc } from '../platform/libc.js';
import type { PlatformIO } from '../platform/platform-io.js';

function report(msg: ServerReport): void {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

/** Stands in for PlatformIO in warmUp(): the real one must not get throwaway pushes. */
const IDLE_IO: BatchIO = {
  pushSignal: () => 0,
  pushControl: () => 0,
  readBatchNow: () => undefined,
  sample: () => 0,
  adjust: () => {},
  writeBatch: async () => {},
  nativeSignal: () => undefined,
};

/**
 * Runs the request path once (parse, server, files in a private temporary directory) while the
 * server waits as a spare: V8 compiles a function when it first runs, which made up more than
 * half of a spare's answer to its request. Best effort: a failure here changes nothing.
 */
function warmUp(): void {
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join(tmpdir(), 'joulegate-batch-warm-'));
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    const entry = { name: 'TIME', domain: 0, idx: 0 };
    const request: ServerStart = {
      runDir: dir,
      key: '0',
      clientUid: uid,
      clientGid: gid,
      signals: [entry],
      controls: [entry],
    };
    const server = new BatchServer(IDLE_IO, parseServerStart(serverStartLine(request)));
    server.createFiles();
    server.close();
  } catch {
    // the real request will say what is wrong
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Lines from the daemon. `watch()` waits for the next line without taking it: a server waiting
 * for its client learns that the daemon let go of it (a line, or the pipe's end); a connected
 * server leaves that line, its next request, to `next()`.
 */
class DaemonLines {
  private readonly lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  private pending?: Promise<string | undefined>;

  /** The next line, or undefined once the daemon closed the pipe. */
  next(): Promise<string | undefined> {
    const line = this.pending ?? this.read();
    this.pending = undefined;
    return line;
  }

  watch(): Promise<string | undefined> {
    this.pending ??= this.read();
    return this.pending;
  }

  private async read(): Promise<string | undefined> {
    const next = await this.lines.next();
    return next.done ? undefined : next.value;
  }
}

/** A fresh PlatformIO: built-in backends and plugins, nothing pushed. */
async function loadIO(): Promise<PlatformIO> {
  const { backends: plugins } = await loadPlugins();
  return loadPlatform({ extra: plugins });
}

/** Which loop answered a client's reads, for the daemon's log. */
function describeSampling(s: BatchServer['sampling']): string {
  const reads = (n: number) => `${n} read${n === 1 ? '' : 's'}`;
  if (s.whyNotNative !== undefined) return `${reads(s.javascriptReads)} in JavaScript (${s.whyNotNative})`;
  return `${reads(s.nativeReads)} in the native loop, ${s.javascriptReads} in JavaScript`;
}

/** The process's exit status, or `released`: the client is gone and the process may serve again. */
type ClientOutcome = number | 'released';

/** Serves the client of one start request, from pushing it to the client's end. */
async function serveClient(pio: PlatformIO, request: string, lines: DaemonLines): Promise<ClientOutcome> {
  let server: BatchServer;
  try {
    server = new BatchServer(pio, parseServerStart(request));
    server.createFiles();
  } catch (err) {
    report({ error: errorMessage(err) });
    return 1;
  }
  report({ ready: true });
  if ((await lines.next()) !== ADMIT_LINE) {
    server.close();
    return 0;
  }
  // Until the client connects, the daemon can still let go of the server (it closes the pipe,
  // and does so by dying): then the files go and the process ends.
  const letGo = new AbortController();
  let connected = false;
  void lines.watch().then(() => {
    if (connected) return;
    letGo.abort(new Error('released by the daemon'));
    // Last resort should the wait for the client not end (it always should): no process lingers.
    setTimeout(() => {
      server.close();
      process.kill(process.pid, 'SIGKILL');
    }, 2000).unref();
  });
  try {
    await server.accept(letGo.signal);
    connected = true;
  } catch (err) {
    if (letGo.signal.aborted) return 0;
    process.stderr.write(`failed: ${errorMessage(err)}\n`);
    return 1;
  }
  report({ connected: true });
  let released = false;
  try {
    const reason = await server.serve((why) => {
      // Told before `q` is answered, so the daemon hears it before the client's PlatformStopBatch.
      if (why !== 'quit' && why !== 'client closed') return;
      released = true;
      report({ released: why, sampling: describeSampling(server.sampling) });
    });
    if (reason !== 'quit') process.stderr.write(`ended: ${reason}\n`);
    return released ? 'released' : 0;
  } catch (err) {
    process.stderr.write(`failed: ${errorMessage(err)}\n`);
    return 1;
  }
}

async function main(): Promise<number> {
  let pio: PlatformIO;
  try {
    const origin = process.env[TIME_ORIGIN_ENV];
    if (origin === undefined || !/^\d+$/.test(origin))
      throw new Error(`${TIME_ORIGIN_ENV} is not set by the daemon`);
    adoptTimeOrigin(BigInt(origin));
    pio = await loadIO();
    libc(); // loaded now rather than while a client waits for its batch to start
    preadThroughLibc(); // polled files are read a thousand times a second here
    loadNativeLoop(); // dlopen now, not at the first request (a failure is told per client)
    warmUp();
  } catch (err) {
    report({ error: errorMessage(err) });
    return 1;
  }
  const lines = new DaemonLines();
  for (;;) {
    report({ idle: true });
    // The daemon closes the pipe when it lets the process go: a spare it no longer needs, or a
    // server that served its last client (JOULEGATE_BATCH_CLIENTS_PER_SERVER).
    const request = await lines.next();
    if (request === undefined) return 0;
    const outcome = await serveClient(pio, request, lines);
    if (outcome !== 'released') return outcome;
    // The launcher may hand this process to another client of the same uid: nothing pushed
    // for the last client may carry over, so every backend starts afresh.
    await pio.close();
    try {
      pio = await loadIO();
    } catch (err) {
      report({ error: errorMessage(err) });
      return 1;
    }
  }
}

main().then((code) => process.exit(code));
