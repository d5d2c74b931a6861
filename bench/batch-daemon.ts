/**
 * Batch server figures taken through dist/app/joulegated.js on a private bus (bench/batch.ts
 * prints them): PlatformStartBatch latency, memory per batch client, and PlatformOpenSession
 * latency while many clients start batch servers at once. Every client is a real process
 * (test/fixtures/batch/start-client.mjs), each with its own batch server.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { LineProcess, OPEN_PROBE, START_CLIENT, type StartResult } from '../test/batch/line-process.js';
import { meanMemory, memoryOf } from './memory.js';
import { importDist, type RunningDaemon, startDaemon } from './shipped.js';

const { GeopmClient } = await importDist<typeof import('../src/ipc/geopm-client.js')>('ipc/geopm-client.js');

const TIME = { name: 'TIME', domain: 0, idx: 0 };

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const ms = (value: number) => Number(value.toFixed(2));

interface Daemon extends RunningDaemon {
  runDir: string;
}

/** A daemon in a directory of its own under `work`; `env` adds to its environment. */
async function daemonIn(work: string, env: Record<string, string>): Promise<Daemon> {
  const dir = mkdtempSync(join(work, 'daemon-'));
  return { ...(await startDaemon(dir, env)), runDir: join(dir, 'run') };
}

/** Command prefix of a client of `daemon` (start-client.mjs, open-probe.mjs): its environment. */
function clientPrefix(daemon: Daemon): string[] {
  return [
    'env',
    `DBUS_SYSTEM_BUS_ADDRESS=${daemon.address}`,
    'JOULEGATE_BUS_NAME=io.github.geopm',
    `JOULEGATE_RUN_PATH=${daemon.runDir}`,
  ];
}

/**
 * PlatformStartBatch round trips by one client: each start, then PlatformStopBatch. `pauseMs`
 * between starts lets the daemon load its next spare server, as between one-shot sessions;
 * with no pause each start waits for a server still loading.
 */
export async function measureStartBatch(
  work: string,
  env: Record<string, string>,
  starts: number,
  pauseMs: number,
): Promise<{ starts: number; pause_ms: number; p50_ms: number; p99_ms: number; max_ms: number }> {
  const daemon = await daemonIn(work, env);
  try {
    const client = await GeopmClient.connect({ address: daemon.address });
    try {
      await client.platformOpenSession();
      const times: number[] = [];
      for (let i = -3; i < starts; i++) {
        await new Promise((r) => setTimeout(r, pauseMs));
        const start = performance.now();
        const { serverPid } = await client.platformStartBatch([TIME], []);
        const took = performance.now() - start;
        await client.platformStopBatch(serverPid);
        if (i >= 0) times.push(took);
      }
      await client.platformCloseSession();
      return {
        starts,
        pause_ms: pauseMs,
        p50_ms: ms(quantile(times, 0.5)),
        p99_ms: ms(quantile(times, 0.99)),
        max_ms: ms(Math.max(...times)),
      };
    } finally {
      client.close();
    }
  } finally {
    await daemon.stop();
  }
}

/**
 * Memory of `clients` batch servers, each serving a real client that has read `reads` batches.
 * USS is what one more client costs (pages no other process shares); PSS adds its share of the
 * pages all of them share (the node binary, koffi), RSS counts those in full for each.
 */
export async function measureMemory(
  work: string,
  env: Record<string, string>,
  clients: number,
  reads: number,
): Promise<Record<string, unknown>> {
  const daemon = await daemonIn(work, { ...env, JOULEGATE_BATCH_IDLE_TIMEOUT: '600' });
  const procs: LineProcess[] = [];
  try {
    const servers: number[] = [];
    for (let i = 0; i < clients; i++) {
      const client = LineProcess.start(clientPrefix(daemon), START_CLIENT);
      procs.push(client);
      await client.next();
      client.send('go');
      const started = await client.next<StartResult>();
      if (!started.ok) throw new Error(`StartBatch failed: ${started.message}`);
      servers.push(started.serverPid!);
      client.send(`read ${reads}`);
      await client.next();
    }
    await new Promise((r) => setTimeout(r, 500));
    const each = servers.map(memoryOf);
    return {
      clients,
      batches_read_each: reads,
      per_batch_server: meanMemory(each),
      daemon: memoryOf(daemon.daemon.pid!),
      how: 'mean over the servers of /proc/<pid>/smaps_rollup; USS = Private_Clean + Private_Dirty',
    };
  } finally {
    await Promise.all(procs.map((p) => p.end()));
    await daemon.stop();
  }
}

/**
 * PlatformOpenSession latency of a probe client (open, close, 10 ms pause, again) for one
 * second alone, then while `clients` client processes call PlatformStartBatch at once.
 */
export async function measureStorm(
  work: string,
  env: Record<string, string>,
  clients: number,
): Promise<Record<string, unknown>> {
  const limit = String(clients + 10);
  const daemon = await daemonIn(work, {
    ...env,
    JOULEGATE_BATCH_MAX_PER_USER: limit,
    JOULEGATE_BATCH_MAX_SERVERS: limit,
    JOULEGATE_BATCH_IDLE_TIMEOUT: '600',
  });
  const procs = Array.from({ length: clients }, () => LineProcess.start(clientPrefix(daemon), START_CLIENT));
  const probe = (pauseMs: number) => LineProcess.start(clientPrefix(daemon), OPEN_PROBE, [String(pauseMs)]);
  try {
    await Promise.all(procs.map((p) => p.next()));
    const quiet = probe(10);
    await quiet.next();
    await new Promise((r) => setTimeout(r, 1000));
    await quiet.end();
    const alone = (await quiet.next<{ open_ms: number[] }>()).open_ms;

    const during = probe(10);
    await during.next();
    const stormStart = performance.now();
    for (const p of procs) p.send('go');
    const results = await Promise.all(procs.map((p) => p.next<StartResult>()));
    const stormMs = performance.now() - stormStart;
    await during.end();
    const opens = (await during.next<{ open_ms: number[] }>()).open_ms;
    const starts = results.filter((r) => r.ok).map((r) => r.ms);
    return {
      clients,
      refused: results.filter((r) => !r.ok).map((r) => r.message),
      storm_ms: ms(stormMs),
      start_batch_in_storm: { p50_ms: ms(quantile(starts, 0.5)), max_ms: ms(Math.max(...starts)) },
      open_session_alone: {
        calls: alone.length,
        p50_ms: ms(quantile(alone, 0.5)),
        p99_ms: ms(quantile(alone, 0.99)),
      },
      open_session_during_storm: {
        calls: opens.length,
        p50_ms: ms(quantile(opens, 0.5)),
        p99_ms: ms(quantile(opens, 0.99)),
        max_ms: ms(Math.max(...opens)),
      },
      target: 'OpenSession p99 < 100 ms during the storm (issue 13)',
      target_met: quantile(opens, 0.99) < 100,
    };
  } finally {
    await Promise.all(procs.map((p) => p.end()));
    await daemon.stop();
  }
}
