/**
 * Entry point of a batch server process, started by the daemon's launcher (src/service/batch-launcher.ts) with
 * the request as JSON on stdin. It builds its own PlatformIO (built-in backends and plugins):
 * GPU libraries do not survive being shared across processes, so the child initialises
 * everything itself. It pushes the requests, creates the files, reports `{"ready":true}` on
 * stdout and serves the client.
 * Exit status 0: the client quit or went away; 1: the request could not be served.
 */
import { readFileSync } from 'node:fs';
import { loadPlatform } from '../backends/load.js';
import { loadPlugins } from '../backends/plugins.js';
import { adoptTimeOrigin } from '../backends/time.js';
import { BatchServer } from '../batch/server.js';
import type { ServerReport } from '../ipc/batch/protocol.js';
import { errorMessage } from '../platform/errors.js';
import { processExists } from '../platform/process.js';
import * as z from '../platform/validation.js';

const requestSchema = z.object({ name: z.string(), domain: z.int(), idx: z.int() });
const id = () => z.int().check(z.nonnegative());
const configSchema = z.object({
  runDir: z.string(),
  key: z.string().check(z.regex(/^\d+$/)),
  clientUid: id(),
  clientGid: id(),
  signals: z.array(requestSchema),
  controls: z.array(requestSchema),
  /** The launcher's pid: the server must not outlive it. */
  parentPid: z.int().check(z.positive()),
  /** The daemon's TIME origin (ns of CLOCK_MONOTONIC): one clock for D-Bus and batch reads. */
  timeOriginNs: z.string().check(z.regex(/^\d+$/)),
});

function report(msg: ServerReport): void {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

async function main(): Promise<number> {
  let server: BatchServer;
  let parentPid: number;
  let clientPid: number;
  try {
    const config = configSchema.parse(JSON.parse(readFileSync(0, 'utf8')));
    adoptTimeOrigin(BigInt(config.timeOriginNs));
    const { backends: plugins } = await loadPlugins();
    const pio = await loadPlatform({ extra: plugins });
    parentPid = config.parentPid;
    clientPid = Number(config.key);
    server = new BatchServer(pio, config);
    server.createFiles();
  } catch (err) {
    report({ error: errorMessage(err) });
    return 1;
  }
  report({ ready: true });
  try {
    // While no client has connected, nothing but a signal would end the wait: a server
    // outliving its daemon or its client would wait forever and leave its files behind.
    const reason = await server.serve(() => {
      if (process.ppid !== parentPid) return 'the daemon that started it is gone';
      if (!processExists(clientPid)) return `client ${clientPid} is gone`;
      return undefined;
    });
    if (reason !== 'quit') process.stderr.write(`batch server ${process.pid} ended: ${reason}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`batch server ${process.pid} failed: ${errorMessage(err)}\n`);
    return 1;
  }
}

main().then((code) => process.exit(code));
