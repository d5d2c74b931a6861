/**
 * joulegated over D-Bus, each figure next to its floor or target (issues 13 and 14):
 *   - PlatformReadSignal("TIME", board, 0) latency of one client, interleaved with
 *     org.freedesktop.DBus.Peer.Ping to the same daemon (what any D-Bus method pays: two hops
 *     through dbus-daemon plus JS (un)marshalling);
 *   - the same with 50 concurrent clients (bench/dbus-readers.mjs: 5 processes × 10
 *     connections, every connection calling back to back), target p99 ≤ 3 × p50;
 *   - the wall time of a one-shot `joulegate session` (one TIME sample through a batch
 *     server) run by an unprivileged user, next to GEOPM's geopmsession and a bare `node -e 0`;
 *   - the daemon's resident memory after that use (target ≤ 48 MB; GEOPM 42.7 MB);
 *   - its growth over a flood of calls at the per-call caps (target < 40 MB).
 * The daemon and the clients are the built ones (dist/). Run as root (the one-shot session runs
 * as `nobody`). Prints JSON.
 * Usage: node --import tsx bench/dbus.ts [--calls N] [--clients N] [--sessions N] [--flood N]
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LineProcess } from '../test/batch/line-process.js';
import { bareNodeMemory, memoryOf } from './memory.js';
import { argValue, importDist, percentiles, requireBuiltDist, startDaemon } from './shipped.js';

requireBuiltDist('dbus');
const { GeopmClient } = await importDist<typeof import('../src/ipc/geopm-client.js')>('ipc/geopm-client.js');
const { LIMITS } = await importDist<typeof import('../src/service/limits.js')>('service/limits.js');

const CALLS = argValue('--calls', 2000);
const CLIENTS = argValue('--clients', 50);
const SESSIONS = argValue('--sessions', 10);
const FLOOD_ROUNDS = argValue('--flood', 20);
const WARMUP = 200;
const REPO = new URL('..', import.meta.url).pathname;
const NOBODY = 65534;

const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const rssMb = (pid: number) => memoryOf(pid).rss_mb;

/** One client, PlatformReadSignal and Ping interleaved so both see the same machine load. */
async function oneClient(address: string) {
  const client = await GeopmClient.connect({ address });
  try {
    await client.platformOpenSession();
    for (let k = 0; k < WARMUP; k++) {
      await client.platformReadSignal('TIME', 0, 0);
      await client.ping();
    }
    const read: number[] = [];
    const ping: number[] = [];
    for (let k = 0; k < CALLS; k++) {
      let t = performance.now();
      await client.platformReadSignal('TIME', 0, 0);
      read.push((performance.now() - t) * 1000);
      t = performance.now();
      await client.ping();
      ping.push((performance.now() - t) * 1000);
    }
    await client.platformCloseSession();
    const r = percentiles(read, 1);
    const p = percentiles(ping, 1);
    return {
      calls: CALLS,
      floor: { name: 'org.freedesktop.DBus.Peer.Ping to joulegated on the same bus', ...p },
      joulegate: { name: 'PlatformReadSignal("TIME", board, 0)', ...r },
      ratio_p50_vs_floor: Number((r.p50_us / p.p50_us).toFixed(2)),
      ratio_p99_vs_floor: Number((r.p99_us / p.p99_us).toFixed(2)),
      geopm: { p50_us: 837, p99_us: 1172 },
    };
  } finally {
    client.close();
  }
}

/**
 * `clients` connections in processes of 10, all calling back to back; rounds of ReadSignal
 * and of Ping alternate. p99/p50 shows how evenly the daemon serves them (target ≤ 3).
 */
async function concurrentClients(address: string, runDir: string) {
  const perProcess = 10;
  const callsEach = 40;
  const rounds = 5;
  const env = ['env', `DBUS_SYSTEM_BUS_ADDRESS=${address}`, `JOULEGATE_RUN_PATH=${runDir}`];
  const procs = Array.from({ length: Math.ceil(CLIENTS / perProcess) }, (_, i) =>
    LineProcess.start(env, join(REPO, 'bench/dbus-readers.mjs'), [
      String(Math.min(perProcess, CLIENTS - i * perProcess)),
      String(callsEach),
    ]),
  );
  try {
    await Promise.all(procs.map((p) => p.next()));
    const samples: Record<'read' | 'ping', number[]> = { read: [], ping: [] };
    for (let round = 0; round < rounds; round++) {
      for (const kind of ['read', 'ping'] as const) {
        for (const p of procs) p.send(kind);
        for (const out of await Promise.all(procs.map((p) => p.next<{ us: number[] }>())))
          samples[kind].push(...out.us);
      }
    }
    const read = percentiles(samples.read, 1);
    const ping = percentiles(samples.ping, 1);
    const ratio = read.p99_us / read.p50_us;
    return {
      clients: CLIENTS,
      how: `${procs.length} processes × ${perProcess} connections, ${callsEach} calls each back to back, ${rounds} rounds of each kind alternating`,
      floor: {
        name: 'Peer.Ping, same clients',
        ...ping,
        p99_over_p50: Number((ping.p99_us / ping.p50_us).toFixed(2)),
      },
      read_signal: { ...read, p99_over_p50: Number(ratio.toFixed(2)) },
      target: 'ReadSignal p99 <= 3 x its p50 (issue 14)',
      target_met: ratio <= 3,
    };
  } finally {
    await Promise.all(procs.map((p) => p.end()));
  }
}

/** Wall time of `argv` with `input` on stdin, as `uid`; throws on a non-zero exit. */
function wallMs(argv: string[], input: string, env: NodeJS.ProcessEnv): number {
  const start = performance.now();
  const r = spawnSync(argv[0]!, argv.slice(1), { input, env, encoding: 'utf8' });
  const took = performance.now() - start;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return took;
}

/** One-shot `joulegate session` (one TIME sample) by an unprivileged user, and a bare node. */
async function oneShotSession(address: string, runDir: string) {
  const admin = await GeopmClient.connect({ address });
  try {
    await admin.platformSetGroupAccess('', ['TIME'], []);
  } finally {
    admin.close();
  }
  const asNobody = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
  const env = { PATH: process.env.PATH, DBUS_SYSTEM_BUS_ADDRESS: address, JOULEGATE_RUN_PATH: runDir };
  const session = [...asNobody, 'sh', join(REPO, 'bin/joulegate'), 'session'];
  const bare = [...asNobody, process.execPath, '-e', '0'];
  wallMs(session, 'TIME board 0\n', env);
  const sessionMs: number[] = [];
  const bareMs: number[] = [];
  for (let k = 0; k < SESSIONS; k++) {
    // A pause as between two commands of a script: the daemon loads its next spare server.
    await new Promise((r) => setTimeout(r, 500));
    sessionMs.push(wallMs(session, 'TIME board 0\n', env));
    bareMs.push(wallMs(bare, '', env));
  }
  return {
    runs: SESSIONS,
    joulegate_session_ms: {
      median: Number(median(sessionMs).toFixed(1)),
      min: Number(Math.min(...sessionMs).toFixed(1)),
    },
    floor: { name: 'node -e 0 (a bare Node.js start)', median_ms: Number(median(bareMs).toFixed(1)) },
    geopm_geopmsession_ms: 98,
  };
}

/**
 * Daemon RSS before and after rounds of calls at the per-call caps: PlatformGetSignalInfo and
 * PlatformStartBatch with the most names a call may carry (each name unique and as long as
 * allowed; both refused after decoding), PlatformStopProfile with the most region names.
 */
async function flood(address: string, daemonPid: number) {
  const client = await GeopmClient.connect({ address });
  const refused: Record<string, number> = {};
  const count = (what: string, p: Promise<unknown>) =>
    p.then(
      () => {},
      () => {
        refused[what] = (refused[what] ?? 0) + 1;
      },
    );
  const name = (tag: string, i: number, bytes: number) => `${tag}-${i}-`.padEnd(bytes, 'x');
  try {
    await client.platformOpenSession();
    const before = rssMb(daemonPid);
    for (let round = 0; round < FLOOD_ROUNDS; round++) {
      const names = Array.from({ length: LIMITS.namesPerCall }, (_, i) =>
        name(`s${round}`, i, LIMITS.nameBytes),
      );
      await count('PlatformGetSignalInfo', client.platformGetSignalInfo(names));
      const requests = names.map((n) => ({ name: n, domain: 0, idx: 0 }));
      await count('PlatformStartBatch', client.platformStartBatch(requests, []));
      const regions = Array.from({ length: LIMITS.regionsPerCall }, (_, i) =>
        name(`r${round}`, i, LIMITS.regionNameBytes),
      );
      await client.platformStartProfile(`flood-${round}`);
      await count('PlatformStopProfile', client.platformStopProfile(regions));
      // A refused stop (the uid's kept names are at their cap) leaves the profile started.
      if (refused.PlatformStopProfile) await client.platformStopProfile([]).catch(() => {});
    }
    await client.platformCloseSession();
    await new Promise((r) => setTimeout(r, 1000));
    const after = rssMb(daemonPid);
    return {
      rounds: FLOOD_ROUNDS,
      per_round: `PlatformGetSignalInfo and PlatformStartBatch with ${LIMITS.namesPerCall} unique names of ${LIMITS.nameBytes} bytes, PlatformStopProfile with ${LIMITS.regionsPerCall} of ${LIMITS.regionNameBytes} bytes`,
      refused,
      daemon_rss_mb: { before, after, growth: Number((after - before).toFixed(1)) },
      target: 'growth < 40 MB (issue 13)',
      target_met: after - before < 40,
    };
  } finally {
    client.close();
  }
}

const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-dbus-'));
chmodSync(work, 0o755); // the unprivileged session client reaches the bus socket and run dir
const running = await startDaemon(work);
try {
  const daemonPid = running.daemon.pid!;
  const runDir = join(work, 'run');
  const loadBefore = loadAverage();
  const fresh = memoryOf(daemonPid);
  const single = await oneClient(running.address);
  const concurrent = await concurrentClients(running.address, runDir);
  const session = await oneShotSession(running.address, runDir);
  await new Promise((r) => setTimeout(r, 1000));
  const afterUse = memoryOf(daemonPid);
  const bareNode = await bareNodeMemory();
  const flooded = await flood(running.address, daemonPid);
  console.log(
    JSON.stringify(
      {
        bench: 'dbus',
        load_average_1min: { before: loadBefore, after: loadAverage() },
        single_client: single,
        concurrent_clients: concurrent,
        one_shot_session: session,
        daemon_rss_mb: {
          fresh: fresh.rss_mb,
          after_use: afterUse.rss_mb,
          floor: {
            name: 'a bare idle `node` (same executable, nothing loaded), this run',
            rss_mb: bareNode.rss_mb,
          },
          above_floor_after_use: Number((afterUse.rss_mb - bareNode.rss_mb).toFixed(1)),
          geopm: { fresh: 39.6, after_use: 42.7 },
          target: 'after use <= 48 MB (issue 14)',
          target_met: afterUse.rss_mb <= 48,
        },
        daemon_memory_detail_mb: { fresh, after_use: afterUse, bare_node: bareNode },
        flood: flooded,
        daemon_start_to_ready_ms: Number(running.startToReadyMs.toFixed(0)),
        daemon_reported_startup_ms: running.reportedStartupMs,
      },
      null,
      2,
    ),
  );
} finally {
  await running.stop();
  rmSync(work, { recursive: true, force: true });
}
