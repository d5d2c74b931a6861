/**
 * Batch round-trip latency: one read_batch (client writes 'r', server reads every pushed
 * signal into the shared buffer, answers 'c') for 1, 16 and 128 signals, measured for
 *   - joulegate: the TypeScript BatchClient against the batch server process (launcher.ts),
 *   - a C floor: two small C programs doing the same FIFO ping-pong over a mmap'd buffer of the
 *     same size (bench/c/floor_*.c, built here with gcc), in the same run, interleaved,
 *   - the D-Bus path: PlatformReadSignal("TIME", board, 0) against joulegated on a private bus.
 * Prints JSON; target: joulegate p50 ≤ 2 × the C floor's p50.
 * Usage: node --import tsx bench/batch.ts [--iterations N] [--rounds R]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchClient } from '../src/ipc/batch/client.js';
import { GeopmClient } from '../src/ipc/geopm-client.js';
import { DomainType } from '../src/platform/domains.js';
import { errorMessage } from '../src/platform/errors.js';
import { BatchServerLauncher } from '../src/service/batch-launcher.js';

interface Latency {
  p50_us: number;
  p99_us: number;
}

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const ITERATIONS = argValue('--iterations', 20000);
const ROUNDS = argValue('--rounds', 3);
const WARMUP = 1000;
const SIZES = [1, 16, 128];
const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-batch-'));
chmodSync(work, 0o711);

function percentiles(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(3));
  return { p50_us: at(0.5), p99_us: at(0.99) };
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function buildFloor(): { server: string; client: string } {
  const dir = join(work, 'floor');
  execFileSync('mkdir', ['-p', dir]);
  const src = new URL('./c/', import.meta.url).pathname;
  const out = { server: join(dir, 'floor_server'), client: join(dir, 'floor_client') };
  execFileSync('gcc', ['-O2', '-o', out.server, join(src, 'floor_server.c')]);
  execFileSync('gcc', ['-O2', '-o', out.client, join(src, 'floor_client.c')]);
  return out;
}

function waitForLine(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    child[stream]!.setEncoding('utf8');
    child[stream]!.on('data', (d: string) => {
      text += d;
      const line = text.split('\n').find((l) => pattern.test(l));
      if (line) resolve(line);
    });
    child.on('exit', (code) => reject(new Error(`${child.spawnargs.join(' ')} exited (${code}): ${text}`)));
  });
}

async function measureFloor(
  bin: { server: string; client: string },
  n: number,
  round: number,
): Promise<Latency> {
  const key = `c${n}-${round}`;
  const server = spawn(bin.server, [work, key, String(n)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await waitForLine(server, 'stdout', /^ready$/);
  const out = execFileSync(bin.client, [work, key, String(n), String(ITERATIONS), String(WARMUP)], {
    encoding: 'utf8',
  });
  const { p50_us, p99_us } = JSON.parse(out) as Latency;
  return { p50_us, p99_us };
}

async function measureJoulegate(launcher: BatchServerLauncher, n: number): Promise<Latency> {
  const signals = Array.from({ length: n }, () => ({ name: 'TIME', domain: DomainType.Board, idx: 0 }));
  const server = await launcher.start({
    runDir: work,
    clientPid: process.pid,
    clientUid: process.getuid!(),
    clientGid: process.getgid!(),
    signals,
    controls: [],
  });
  const client = BatchClient.connect({ runDir: work, key: server.serverKey, numSignals: n, numControls: 0 });
  const times = new Array<number>(ITERATIONS);
  let checksum = 0;
  for (let i = -WARMUP; i < ITERATIONS; i++) {
    const start = process.hrtime.bigint();
    const values = client.readBatch();
    checksum += values[n - 1]!;
    const end = process.hrtime.bigint();
    if (i >= 0) times[i] = Number(end - start) / 1000;
  }
  client.close();
  await server.exited;
  if (!(checksum > 0)) throw new Error('batch reads returned no TIME values');
  return percentiles(times);
}

/** PlatformReadSignal round trips against joulegated on a private bus, or why not measured. */
async function measureDbus(calls: number): Promise<Record<string, unknown>> {
  const bus = spawn('dbus-daemon', ['--session', '--nofork', '--nopidfile', '--print-address=1'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let daemon: ChildProcess | undefined;
  try {
    const address = (await waitForLine(bus, 'stdout', /^unix:/)).trim();
    const runDir = join(work, 'run');
    const env = {
      ...process.env,
      DBUS_SYSTEM_BUS_ADDRESS: address,
      JOULEGATE_RUN_PATH: runDir,
      JOULEGATE_CONFIG_PATH: join(work, 'etc'),
    };
    const entry = new URL('../src/app/joulegated.ts', import.meta.url).pathname;
    daemon = spawn(process.execPath, ['--import', 'tsx', entry], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    await Promise.race([
      waitForLine(daemon, 'stderr', /joulegated: ready/),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('joulegated did not start in 60 s')), 60_000),
      ),
    ]);
    const client = await GeopmClient.connect({ address });
    try {
      await client.platformOpenSession();
      const times: number[] = [];
      for (let i = -100; i < calls; i++) {
        const start = process.hrtime.bigint();
        const value = await client.platformReadSignal('TIME', DomainType.Board, 0);
        const end = process.hrtime.bigint();
        if (!(value >= 0)) throw new Error(`PlatformReadSignal returned ${value}`);
        if (i >= 0) times.push(Number(end - start) / 1000);
      }
      await client.platformCloseSession();
      return { available: true, calls, ...percentiles(times) };
    } finally {
      client.close();
    }
  } catch (err) {
    return { available: false, reason: errorMessage(err) };
  } finally {
    daemon?.kill('SIGTERM');
    bus.kill('SIGTERM');
  }
}

async function main(): Promise<void> {
  const floorBin = buildFloor();
  const launcher = new BatchServerLauncher();
  const cases = [];
  for (const n of SIZES) {
    const floorRounds: Latency[] = [];
    const tsRounds: Latency[] = [];
    // Interleaved rounds, so load from other processes hits both sides alike.
    for (let r = 0; r < ROUNDS; r++) {
      floorRounds.push(await measureFloor(floorBin, n, r));
      tsRounds.push(await measureJoulegate(launcher, n));
    }
    const floorP50 = median(floorRounds.map((x) => x.p50_us));
    const tsP50 = median(tsRounds.map((x) => x.p50_us));
    const ratio = Number((tsP50 / floorP50).toFixed(3));
    cases.push({
      signals: n,
      c_floor: { p50_us: floorP50, p99_us: median(floorRounds.map((x) => x.p99_us)), rounds: floorRounds },
      joulegate: { p50_us: tsP50, p99_us: median(tsRounds.map((x) => x.p99_us)), rounds: tsRounds },
      ratio_p50_vs_floor: ratio,
      target_met: ratio <= 2,
    });
  }
  const dbus = await measureDbus(2000);
  const batch1 = cases[0]!.joulegate.p50_us;
  const result = {
    benchmark: 'batch read round trip',
    iterations_per_round: ITERATIONS,
    rounds: ROUNDS,
    target: 'joulegate p50 <= 2 x C floor p50',
    cases,
    dbus_read_signal: dbus,
    dbus_p50_vs_batch_1_signal:
      typeof dbus.p50_us === 'number' ? Number((dbus.p50_us / batch1).toFixed(1)) : null,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

main()
  .catch((err) => {
    process.stderr.write(`bench/batch: ${errorMessage(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => rmSync(work, { recursive: true, force: true }));
