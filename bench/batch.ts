/**
 * Batch round-trip latency: one read_batch (client writes 'r', server reads every pushed
 * signal into the shared buffer, answers 'c') for 1, 16 and 128 signals, each a distinct
 * cpufreq attribute × CPU on a generated 64-CPU tree with one cpufreq policy per CPU (so a
 * batch of N signals reads N files), measured for
 *   - joulegate: the BatchClient against the batch server, both from dist/ (the launcher
 *     starts dist/app/batch-server.js, which reads the tree through JOULEGATE_SYSROOT),
 *   - its floor: two small C programs doing the same work the plainest way — the same FIFO
 *     ping-pong over a mmap'd buffer of the same size, the server preading the same N files
 *     kept open (bench/c/floor_*.c, built here with gcc) — in the same run, interleaved,
 *   - the D-Bus path: PlatformReadSignal of the 1-signal batch's signal against
 *     dist/app/joulegated.js on a private bus, compared with that batch.
 * Both sides' values are checked against the files. Prints JSON; target: joulegate p50 ≤ 2 ×
 * the floor's p50.
 * Then, each next to its floor or target:
 *   - server CPU per sample with the client reading at 1 kHz (1 and 16 cpufreq files, and TIME,
 *     which reads no file: what GEOPM measured 11.7 µs with, docs/reference/geopm-service.md#measured-for-comparison),
 *     joulegate's server, the C floor server and the Node.js floor server (the C floor's loop
 *     in plain JavaScript, bench/floor/node_floor_server.mjs) interleaved, CPU time from
 *     /proc/<pid>/task/<tid>/schedstat, early (the first seconds, JIT compilation included),
 *     steady, and over the whole run from the first sample (session); with the server's context
 *     switches per sample, steady (all, and the involuntary ones),
 *   - through joulegated (bench/batch-daemon.ts): PlatformStartBatch p50/p99 (GEOPM 5.1 ms,
 *     target ≤ 10 ms), memory per batch client (GEOPM 25 MB RSS, target ≤ 13 MB), and
 *     PlatformOpenSession p50/p99 while --storm clients start batch servers at once (target
 *     p99 < 100 ms).
 * Usage: node --import tsx bench/batch.ts [--iterations N] [--rounds R] [--rate-samples N]
 *        [--starts N] [--memory-clients N] [--storm N] [--only latency|rate|daemon]
 * (`--only` runs one part: the round trips, the CPU per sample at 1 kHz, or the figures through
 * joulegated.)
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BatchRequest } from '../src/ipc/batch/protocol.js';
import { DomainType } from '../src/platform/domains.js';
import { errorMessage } from '../src/platform/errors.js';
import { generateTree } from '../test/fixtures/generate.js';
import { measureMemory, measureStartBatch, measureStorm } from './batch-daemon.js';
import { argValue, firstLine, importDist, percentiles, requireBuiltDist, startDaemon } from './shipped.js';

requireBuiltDist('batch');
const { BatchServerLauncher } =
  await importDist<typeof import('../src/service/batch-launcher.js')>('service/batch-launcher.js');
const { BatchClient } = await importDist<typeof import('../src/ipc/batch/client.js')>('ipc/batch/client.js');
const { GeopmClient } = await importDist<typeof import('../src/ipc/geopm-client.js')>('ipc/geopm-client.js');

interface Latency {
  p50_us: number;
  p99_us: number;
}

const ITERATIONS = argValue('--iterations', 20000);
const ROUNDS = argValue('--rounds', 3);
const RATE_SAMPLES = argValue('--rate-samples', 3000);
const STEADY_AFTER = argValue('--steady-after', 2000);
const STARTS = argValue('--starts', 30);
const MEMORY_CLIENTS = argValue('--memory-clients', 10);
const STORM = argValue('--storm', 100);
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
if (ONLY !== undefined && !['latency', 'rate', 'daemon'].includes(ONLY))
  throw new Error(`--only takes latency, rate or daemon, not ${ONLY}`);
/** Whether this run measures `part`. */
const runs = (part: 'latency' | 'rate' | 'daemon') => ONLY === undefined || ONLY === part;
const WARMUP = 1000;
const SIZES = [1, 16, 128];
const SHAPE = { packages: 2, coresPerPackage: 16, threadsPerCore: 2, cpufreq: 'cpu' } as const;
const CPUS = SHAPE.packages * SHAPE.coresPerPackage * SHAPE.threadsPerCore;
/** Polled (non-constant) cpufreq attributes: signal name and file; values in kHz, signals in Hz. */
const ATTRIBUTES = [
  ['CPUFREQ::SCALING_CUR_FREQ', 'scaling_cur_freq'],
  ['CPUFREQ::SCALING_MAX_FREQ', 'scaling_max_freq'],
  ['CPUFREQ::SCALING_MIN_FREQ', 'scaling_min_freq'],
] as const;
const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-batch-'));
chmodSync(work, 0o711);
const tree = join(work, 'sysroot');

interface Request {
  name: string;
  domain: DomainType;
  idx: number;
  file: string;
}

/** N distinct signal requests, attribute by attribute over every CPU, each backed by its own file. */
function requestsOf(n: number): Request[] {
  if (n > ATTRIBUTES.length * CPUS)
    throw new Error(`the tree offers ${ATTRIBUTES.length * CPUS} signals, not ${n}`);
  return Array.from({ length: n }, (_, k) => {
    const [name, attribute] = ATTRIBUTES[Math.floor(k / CPUS)]!;
    const cpu = k % CPUS;
    const file = join(tree, `sys/devices/system/cpu/cpufreq/policy${cpu}/${attribute}`);
    return { name, domain: DomainType.Cpu, idx: cpu, file };
  });
}

/** What the N signals must read, summed: each file's kHz in Hz. */
function expectedSum(requests: Request[]): number {
  return requests.reduce((sum, r) => sum + Number(readFileSync(r.file, 'latin1')) * 1e3, 0);
}

function checkSum(who: string, got: number, expected: number): void {
  if (got !== expected) throw new Error(`${who} read values summing to ${got}, the files to ${expected}`);
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function buildFloor(): { server: string; client: string } {
  const dir = join(work, 'floor');
  mkdirSync(dir);
  const src = new URL('./c/', import.meta.url).pathname;
  const out = { server: join(dir, 'floor_server'), client: join(dir, 'floor_client') };
  execFileSync('gcc', ['-O2', '-o', out.server, join(src, 'floor_server.c')]);
  execFileSync('gcc', ['-O2', '-o', out.client, join(src, 'floor_client.c')]);
  return out;
}

/** CPU time of every thread of `pid` so far, in ns (schedstat: time on the CPU). */
function cpuNs(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  }
  return total;
}

/** Context switches of `pid`'s main thread (where a batch server's loop runs) so far. */
function switchesOf(pid: number): { voluntary: number; involuntary: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const count = (name: string) =>
    Number(new RegExp(`^${name}_ctxt_switches:\\s+(\\d+)`, 'm').exec(status)?.[1]);
  return { voluntary: count('voluntary'), involuntary: count('nonvoluntary') };
}

/**
 * Server CPU µs per sample: in the first seconds after connecting, once warm, and over the
 * whole run from the first sample (what a short sampling session pays, compilation included);
 * and the server's context switches per sample once warm (`preempted`: the involuntary ones).
 */
interface RateFigures {
  early: number;
  steady: number;
  session: number;
  switches: number;
  preempted: number;
}

/**
 * The server's CPU µs per sample while `read` runs at 1 kHz (the client sleeps in between, as
 * a 1 ms sampling loop does): what sampling costs the node, wake-ups included. `early` is
 * RATE_SAMPLES samples after 0.5 s (a JIT-compiled server still compiles its sampling path
 * then: a one-off cost per server); `steady` the same count after STEADY_AFTER more samples;
 * `session` every sample from the first.
 */
function cpuPerSampleAt1kHz(serverPid: number, read: () => void): RateFigures {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const paced = (samples: number) => {
    const t0 = performance.now();
    for (let i = 0; i < samples; i++) {
      read();
      const wait = t0 + i + 1 - performance.now();
      if (wait > 0) Atomics.wait(sleeper, 0, 0, wait);
    }
  };
  const perSample = (ns: number, samples: number) => Number((ns / 1000 / samples).toFixed(2));
  const measure = () => {
    const before = cpuNs(serverPid);
    paced(RATE_SAMPLES);
    return perSample(cpuNs(serverPid) - before, RATE_SAMPLES);
  };
  const start = cpuNs(serverPid);
  paced(500);
  const early = measure();
  paced(STEADY_AFTER);
  const switched = switchesOf(serverPid);
  const steady = measure();
  const now = switchesOf(serverPid);
  const session = perSample(cpuNs(serverPid) - start, 500 + 2 * RATE_SAMPLES + STEADY_AFTER);
  const per = (n: number) => Number((n / RATE_SAMPLES).toFixed(2));
  return {
    early,
    steady,
    session,
    switches: per(now.voluntary + now.involuntary - switched.voluntary - switched.involuntary),
    preempted: per(now.involuntary - switched.involuntary),
  };
}

/** The Node.js floor server (bench/floor/node_floor_server.mjs): the C floor's loop in plain JavaScript. */
const NODE_FLOOR = [process.execPath, new URL('./floor/node_floor_server.mjs', import.meta.url).pathname];

async function rateFloor(command: string[], requests: Request[], round: number): Promise<RateFigures> {
  const key = `rate${requests.length}-${round}-${command.length}`;
  const [program, ...args] = command as [string, ...string[]];
  const server = spawn(program, [...args, work, key, ...requests.map((r) => r.file)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await firstLine(server, 'stdout', /^ready$/);
  const n = requests.length;
  const client = BatchClient.connect({ runDir: work, key, numSignals: n, numControls: 0 });
  const exited = new Promise((resolve) => server.once('exit', resolve));
  try {
    return cpuPerSampleAt1kHz(server.pid!, () => client.readBatch());
  } finally {
    client.close();
    await exited;
  }
}

async function rateJoulegate(
  launcher: InstanceType<typeof BatchServerLauncher>,
  requests: BatchRequest[],
): Promise<RateFigures> {
  const server = await startServer(launcher, requests);
  const n = requests.length;
  const client = BatchClient.connect({ runDir: work, key: server.serverKey, numSignals: n, numControls: 0 });
  try {
    return cpuPerSampleAt1kHz(server.serverPid, () => client.readBatch());
  } finally {
    client.close();
    await server.exited;
  }
}

/** A batch server for `requests` with the bench process as its client, admitted. */
async function startServer(launcher: InstanceType<typeof BatchServerLauncher>, requests: BatchRequest[]) {
  const server = await launcher.start({
    runDir: work,
    clientPid: process.pid,
    clientUid: process.getuid!(),
    clientGid: process.getgid!(),
    signals: requests.map(({ name, domain, idx }) => ({ name, domain, idx })),
    controls: [],
  });
  server.admit();
  return server;
}

async function measureFloor(
  bin: { server: string; client: string },
  requests: Request[],
  round: number,
): Promise<Latency> {
  const n = requests.length;
  const key = `c${n}-${round}`;
  const server: ChildProcess = spawn(bin.server, [work, key, ...requests.map((r) => r.file)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await firstLine(server, 'stdout', /^ready$/);
  const out = execFileSync(bin.client, [work, key, String(n), String(ITERATIONS), String(WARMUP)], {
    encoding: 'utf8',
  });
  const { p50_us, p99_us, value_sum } = JSON.parse(out) as Latency & { value_sum: number };
  checkSum('the C floor', value_sum, expectedSum(requests));
  return { p50_us, p99_us };
}

async function measureJoulegate(
  launcher: InstanceType<typeof BatchServerLauncher>,
  requests: Request[],
): Promise<Latency> {
  const n = requests.length;
  const server = await startServer(launcher, requests);
  const client = BatchClient.connect({ runDir: work, key: server.serverKey, numSignals: n, numControls: 0 });
  const times = new Array<number>(ITERATIONS);
  let values: ArrayLike<number> = [];
  for (let i = -WARMUP; i < ITERATIONS; i++) {
    const start = process.hrtime.bigint();
    values = client.readBatch();
    const end = process.hrtime.bigint();
    if (i >= 0) times[i] = Number(end - start) / 1000;
  }
  let sum = 0;
  for (let k = 0; k < n; k++) sum += values[k]!;
  client.close();
  await server.exited;
  checkSum('joulegate', sum, expectedSum(requests));
  return percentiles(times);
}

/** PlatformReadSignal round trips of `request` against joulegated on a private bus, or why not measured. */
async function measureDbus(request: Request, calls: number): Promise<Record<string, unknown>> {
  const name = `PlatformReadSignal("${request.name}", cpu, ${request.idx}) to dist/app/joulegated.js`;
  try {
    const running = await startDaemon(work, { JOULEGATE_SYSROOT: tree });
    try {
      const client = await GeopmClient.connect({ address: running.address });
      try {
        await client.platformOpenSession();
        const expected = expectedSum([request]);
        const times: number[] = [];
        for (let i = -100; i < calls; i++) {
          const start = process.hrtime.bigint();
          const value = await client.platformReadSignal(request.name, request.domain, request.idx);
          const end = process.hrtime.bigint();
          checkSum('PlatformReadSignal', value, expected);
          if (i >= 0) times.push(Number(end - start) / 1000);
        }
        await client.platformCloseSession();
        return { available: true, name, calls, ...percentiles(times) };
      } finally {
        client.close();
      }
    } finally {
      await running.stop();
    }
  } catch (err) {
    return { available: false, name, reason: errorMessage(err) };
  }
}

async function main(): Promise<void> {
  generateTree(tree, SHAPE);
  // The batch servers the launcher starts read this tree, with no admin config and no plugins.
  process.env.JOULEGATE_SYSROOT = tree;
  process.env.JOULEGATE_CONFIG_PATH = join(work, 'config');
  process.env.JOULEGATE_PLUGIN_PATH = '';
  const floorBin = buildFloor();
  // Quiet: the servers' exits would go on stderr, one line each.
  const launcher = new BatchServerLauncher({ log: () => {} });
  const cases = [];
  for (const n of runs('latency') ? SIZES : []) {
    const requests = requestsOf(n);
    const floorRounds: Latency[] = [];
    const tsRounds: Latency[] = [];
    // Interleaved rounds, so load from other processes hits both sides alike.
    for (let r = 0; r < ROUNDS; r++) {
      floorRounds.push(await measureFloor(floorBin, requests, r));
      tsRounds.push(await measureJoulegate(launcher, requests));
    }
    const floorP50 = median(floorRounds.map((x) => x.p50_us));
    const tsP50 = median(tsRounds.map((x) => x.p50_us));
    const ratio = Number((tsP50 / floorP50).toFixed(3));
    cases.push({
      signals: n,
      files_read_per_batch: new Set(requests.map((r) => r.file)).size,
      floor: { p50_us: floorP50, p99_us: median(floorRounds.map((x) => x.p99_us)), rounds: floorRounds },
      joulegate: { p50_us: tsP50, p99_us: median(tsRounds.map((x) => x.p99_us)), rounds: tsRounds },
      ratio_p50_vs_floor: ratio,
      target_met: ratio <= 2,
    });
  }
  const rates = [];
  const rateCases: { case: string; requests: Request[] | BatchRequest[]; floor: boolean }[] = [
    { case: '1 cpufreq file', requests: requestsOf(1), floor: true },
    { case: '16 cpufreq files', requests: requestsOf(16), floor: true },
    // What GEOPM's 11.7 µs was measured with (only its TIME IOGroup loads on this VM kind).
    { case: 'TIME (no file)', requests: [{ name: 'TIME', domain: DomainType.Board, idx: 0 }], floor: false },
  ];
  for (const { case: name, requests, floor } of runs('rate') ? rateCases : []) {
    const floorRounds: RateFigures[] = [];
    const nodeFloorRounds: RateFigures[] = [];
    const tsRounds: RateFigures[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      if (floor) {
        floorRounds.push(await rateFloor([floorBin.server], requests as Request[], r));
        nodeFloorRounds.push(await rateFloor(NODE_FLOOR, requests as Request[], r));
      }
      tsRounds.push(await rateJoulegate(launcher, requests));
    }
    const summary = (rounds: RateFigures[]) =>
      rounds.length === 0
        ? null
        : {
            early_us: median(rounds.map((x) => x.early)),
            steady_us: median(rounds.map((x) => x.steady)),
            session_us: median(rounds.map((x) => x.session)),
            switches_per_sample: median(rounds.map((x) => x.switches)),
            preempted_per_sample: median(rounds.map((x) => x.preempted)),
          };
    const joulegate = summary(tsRounds)!;
    rates.push({
      case: name,
      signals: requests.length,
      floor: summary(floorRounds),
      node_floor: summary(nodeFloorRounds),
      joulegate,
      ratio_steady_vs_node_floor: floor
        ? Number((joulegate.steady_us / summary(nodeFloorRounds)!.steady_us).toFixed(2))
        : null,
      rounds: { floor: floorRounds, node_floor: nodeFloorRounds, joulegate: tsRounds },
      geopm_us: 11.7,
      target_met: joulegate.steady_us <= 11.7,
    });
  }
  const dbus = runs('latency') ? await measureDbus(requestsOf(1)[0]!, 2000) : { skipped: true };
  const daemonEnv = { JOULEGATE_SYSROOT: tree };
  const skipped = { skipped: true };
  const startBatch = runs('daemon')
    ? {
        spare_ready: await measureStartBatch(work, daemonEnv, STARTS, 800),
        back_to_back: await measureStartBatch(work, daemonEnv, Math.min(STARTS, 10), 0),
        geopm_ms: 5.1,
        target: 'p50 <= 10 ms with a spare ready (issue 14)',
      }
    : skipped;
  const memory = runs('daemon')
    ? {
        ...(await measureMemory(work, daemonEnv, MEMORY_CLIENTS, 1000)),
        geopm_rss_mb: 25.2,
        target: 'USS <= 13 MB per extra batch client (issue 14)',
      }
    : skipped;
  const storm = STORM > 0 && runs('daemon') ? await measureStorm(work, daemonEnv, STORM) : skipped;
  const batch1 = cases[0]?.joulegate.p50_us ?? Number.NaN;
  const result = {
    benchmark: 'batch read round trip',
    tree: `generated, ${CPUS} CPUs, one cpufreq policy per CPU`,
    signals_used: `${ATTRIBUTES.map(([name]) => name).join(', ')} at CPU 0..${CPUS - 1}, in that order`,
    iterations_per_round: ITERATIONS,
    rounds: ROUNDS,
    floor:
      'C server and client (bench/c, gcc -O2): same FIFOs and mmap buffer, pread of the same N files kept open',
    joulegate: 'BatchClient.readBatch() against dist/app/batch-server.js (BatchServerLauncher)',
    target: 'joulegate p50 <= 2 x floor p50',
    cases,
    cpu_per_sample_1khz: {
      how: `client reads at 1 kHz; server CPU (all threads) / samples over ${RATE_SAMPLES} samples, early: after 0.5 s, steady: after ${STEADY_AFTER} more, session: all ${500 + 2 * RATE_SAMPLES + STEADY_AFTER} from the first; server main-thread context switches per sample (steady; preempted: involuntary); median of ${ROUNDS} interleaved rounds; load average ${loadavg()[0]!.toFixed(2)} at the end`,
      cases: rates,
    },
    start_batch: startBatch,
    memory_per_batch_client: memory,
    start_storm: storm,
    dbus_read_signal: dbus,
    dbus_p50_vs_batch_1_signal:
      'p50_us' in dbus && typeof dbus.p50_us === 'number' ? Number((dbus.p50_us / batch1).toFixed(1)) : null,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

try {
  await main();
} catch (err) {
  process.stderr.write(`bench/batch: ${errorMessage(err)}\n`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
