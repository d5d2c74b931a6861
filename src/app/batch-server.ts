/**
 * Entry point of a batch server process, started by the daemon's launcher
 * (src/service/batch-launcher.ts), usually ahead of any request. It builds its own PlatformIO
 * (built-in backends and plugins: GPU libraries do not survive being shared across processes),
 * reports `idle` and waits on stdin for a request. Given one, it pushes it, creates the files and
 * reports `ready`; once the daemon has recorded it (`admit`) it lets the client connect, reports
 * `connected` and serves the client (messages: src/ipc/batch/protocol.ts).
 * Exit status 0: the client quit or went away, or the daemon let go of the server before its
 * client connected; 1: the request could not be served.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { loadPlatform } from '../backends/load.js';
import { loadPlugins } from '../backends/plugins.js';
import { preadThroughLibc } from '../backends/polled-file.js';
import { adoptTimeOrigin, TIME_ORIGIN_ENV } from '../backends/time.js';
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

/** The next line from the daemon, or undefined once it closed the pipe. */
function daemonLines(): () => Promise<string | undefined> {
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  return async () => {
    const next = await lines.next();
    return next.done ? undefined : next.value;
  };
}

async function main(): Promise<number> {
  let pio: PlatformIO;
  try {
    const origin = process.env[TIME_ORIGIN_ENV];
    if (origin === undefined || !/^\d+$/.test(origin))
      throw new Error(`${TIME_ORIGIN_ENV} is not set by the daemon`);
    adoptTimeOrigin(BigInt(origin));
    const { backends: plugins } = await loadPlugins();
    pio = await loadPlatform({ extra: plugins });
    libc(); // loaded now rather than while a client waits for its batch to start
    preadThroughLibc(); // polled files are read a thousand times a second here
    warmUp();
  } catch (err) {
    report({ error: errorMessage(err) });
    return 1;
  }
  report({ idle: true });
  const nextLine = daemonLines();
  const request = await nextLine();
  if (request === undefined) return 0; // a spare the daemon no longer needs

  let server: BatchServer;
  try {
    server = new BatchServer(pio, parseServerStart(request));
    server.createFiles();
  } catch (err) {
    report({ error: errorMessage(err) });
    return 1;
  }
  report({ ready: true });
  if ((await nextLine()) !== ADMIT_LINE) {
    server.close();
    return 0;
  }
  // Until the client connects, the daemon can still let go of the server by closing the pipe
  // (and does so by dying): then the files go and the process ends.
  const released = new AbortController();
  let connected = false;
  void nextLine().then(() => {
    if (connected) return;
    released.abort(new Error('released by the daemon'));
    // Last resort should the wait for the client not end (it always should): no process lingers.
    setTimeout(() => {
      server.close();
      process.kill(process.pid, 'SIGKILL');
    }, 2000).unref();
  });
  try {
    await server.accept(released.signal);
    connected = true;
  } catch (err) {
    if (released.signal.aborted) return 0;
    process.stderr.write(`failed: ${errorMessage(err)}\n`);
    return 1;
  }
  report({ connected: true });
  try {
    const reason = await server.serve();
    if (reason !== 'quit') process.stderr.write(`ended: ${reason}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`failed: ${errorMessage(err)}\n`);
    return 1;
  }
}

main().then((code) => process.exit(code));
