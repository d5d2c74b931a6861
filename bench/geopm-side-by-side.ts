/**
 * joulegated next to GEOPM 3.1's own daemon (geopmd) and clients, on this machine, in one run
 * (issue 27; how to build the reference: docs/geopm-side-by-side.md). Each daemon runs on a
 * private bus of its own, in a mount namespace of its own (`unshare -m`) with private overlays
 * on /run and /etc (and, for GEOPM, on /usr/bin, where geopmd looks for geopmread/geopmwrite)
 * and a tmpfs on /run/geopm, so its /run/geopm and /etc/geopm are its own and the host's are
 * never touched. Both are driven
 * by the same client code (dist/'s GeopmClient and BatchClient), the sides interleaved round by
 * round (A B, then B A, ...) so both see the same machine load. Each figure is printed for both,
 * with the ratio joulegate / GEOPM and the 1-minute load average around it:
 *   - each fresh daemon's first --warm-up ReadSignal calls, in blocks of 1000, then 200 new
 *     clients (joulegated's JIT warm-up), after which the ReadSignal figures measure warm
 *     daemons and clients;
 *   - PlatformReadSignal("TIME", board, 0): p50/p99 of 1 client and of 50 (bench/dbus-readers.mjs),
 *     and again from a C client (bench/c/dbus_read_client.c, sd-bus), which adds no tail of its own;
 *   - each daemon's CPU per client life (connect, open a session, close it, leave), 50 at once;
 *   - PlatformStartBatch (+ StopBatch) 30 back to back, and with 0.5 s pauses: p50;
 *   - batch client connect + one read + "q" to the server + PlatformStopBatch;
 *   - batch server CPU per sample: `session -p 0.001 -t 10` on SERVICE::TIME by GEOPM's
 *     geopmsession against both daemons (joulegate's own session without GEOPM_REF), the
 *     server's CPU from schedstat (all threads) per sample in the steady state, and over the
 *     whole session, placed by the scheduler and pinned (one CPU for both; two CPUs); for
 *     joulegated, which loop answered the reads (from its log);
 *   - one-shot `session -t 0` of "TIME board 0" as `nobody`: wall, median of 10
 *     (`joulegate session` against joulegated, GEOPM's geopmsession against geopmd);
 *   - each daemon's PSS after all that.
 * Without GEOPM_REF (the reference build's directory) it says so and runs joulegate's side
 * only. Run as root (namespaces, mounts, `nobody`). Prints JSON.
 * Usage: GEOPM_REF=/path node --import tsx bench/geopm-side-by-side.ts [--calls N] [--c-calls N]
 *        [--cpu-rounds N] [--warm-up N] [--only read|starts|cpu|one-shot] (one part; the
 *        daemons' PSS is printed with every part)
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LineProcess } from '../test/batch/line-process.js';
import { doneWhen } from './geopm-done-when.js';
import { memoryOf } from './memory.js';
import { quantileRatioInterval } from './round-interval.js';
import {
  argValue,
  firstLine,
  importDist,
  percentiles,
  requireBuiltDist,
  SERVICE_SESSIONS,
  startBus,
  startDaemon,
} from './shipped.js';

/** A bad argument: one line and exit status 2. */
function usage(message: string): never {
  process.stderr.write(`bench/geopm-side-by-side: ${message}\n`);
  process.exit(2);
}

requireBuiltDist('geopm-side-by-side');
const { GeopmClient } = await importDist<typeof import('../src/ipc/geopm-client.js')>('ipc/geopm-client.js');
const { DBusConnection } =
  await importDist<typeof import('../src/ipc/dbus/connection.js')>('ipc/dbus/connection.js');
type Bus = Awaited<ReturnType<typeof DBusConnection.connect>>;

const REPO = new URL('..', import.meta.url).pathname;
const GEOPM_REF = process.env.GEOPM_REF || undefined;
const CALLS = argValue('--calls', 1800);
/**
 * The C client's calls per side for the 1-client figure: more than the Node.js client's, since
 * its p99 sits where 0.1-1 % of slow calls decide it, and 1800 calls hold only 18 of those.
 */
const C_CALLS = argValue('--c-calls', 6000);
/**
 * Sessions per daemon and fixed placement (twice that with free placement). On the 2-core
 * development VM either server has sessions of twice its usual CPU per sample at the same
 * placement; the median of six free sessions moved by a quarter with where they fell, that of
 * twelve did not (docs/geopm-side-by-side.md, issue 27's tenth round).
 */
const CPU_ROUNDS = argValue('--cpu-rounds', 6);
/** ReadSignal calls each fresh daemon serves before the ReadSignal figures (see readSignalAfterStart). */
const WARM_UP_CALLS = argValue('--warm-up', 10_000);
/** Batches of 50 new clients each fresh daemon serves after those calls (see readSignalAfterStart). */
const WARM_UP_CONNECTIONS = 4;
/** Calls per side in untimed rounds that warm the Node.js clients before their timed ones. */
const NODE_CLIENT_WARM_UP = 5000;
if (!(WARM_UP_CALLS >= 1000 && C_CALLS >= 6))
  usage('--warm-up takes 1000 calls or more, --c-calls 6 or more (6 rounds)');
const ONE_SHOTS = 10;
const PARTS = ['read', 'starts', 'cpu', 'one-shot'] as const;
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
if (ONLY !== undefined && !(PARTS as readonly string[]).includes(ONLY))
  usage(`--only takes ${PARTS.join(', ')}, not ${ONLY}`);
const runs = (part: (typeof PARTS)[number]) => ONLY === undefined || ONLY === part;
const NOBODY = 65534;

type Kind = 'joulegate' | 'geopm';

interface Side {
  kind: Kind;
  address: string;
  /** The daemon's pid; its mount namespace is the side's. */
  pid: number;
  /** The side's batch client (bench/side-by-side-client.mjs), in the daemon's namespace. */
  batch: LineProcess;
  /** Runs `argv` in the daemon's namespace with the side's bus, as `uid` if given. */
  inside(argv: string[], uid?: number): string[];
  /** The side's session command (joulegate session / geopmsession). */
  session: string[];
  /** The end of the daemon's log (GEOPM's; joulegated's goes to startDaemon), for errors. */
  logTail(): string;
  stop(): Promise<void>;
}

/**
 * Run by `unshare -m --propagation private` before the daemon: private overlays on /run and
 * /etc (their changes land under the side's work directory), a tmpfs of its own on /run/geopm,
 * and for GEOPM an overlay on /usr/bin holding geopmread/geopmwrite. Then execs the daemon.
 * /run/geopm is a tmpfs as on the nodes both daemons are made for (systemd mounts /run as one);
 * here /run sits on the VM's disk, where each session file a daemon creates or removes went
 * through the filesystem journal, on either side.
 */
const NAMESPACE_SETUP = `set -e
w=$1; shift
for d in run etc; do
  mkdir -p "$w/$d.upper" "$w/$d.work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$w/$d.upper,workdir=$w/$d.work" "/$d"
done
mkdir -p -m 711 /run/geopm
mount -t tmpfs -o mode=0711 tmpfs /run/geopm
if [ -d "$w/bin.upper" ]; then
  mkdir -p "$w/bin.work"
  mount -t overlay overlay -o "lowerdir=/usr/bin,upperdir=$w/bin.upper,workdir=$w/bin.work" /usr/bin
fi
exec "$@"`;

const namespaced = (work: string) => [
  'unshare',
  '-m',
  '--propagation',
  'private',
  'sh',
  '-c',
  NAMESPACE_SETUP,
  'sh',
  work,
];

function insideOf(pid: number, address: string) {
  return (argv: string[], uid?: number) => [
    'nsenter',
    '-t',
    String(pid),
    '-m',
    ...(uid === undefined ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups']),
    'env',
    `PATH=${process.env.PATH}`,
    `DBUS_SYSTEM_BUS_ADDRESS=${address}`,
    'JOULEGATE_RUN_PATH=/run/geopm',
    ...(GEOPM_REF ? [`GEOPM_REF=${GEOPM_REF}`] : []),
    ...argv,
  ];
}

/** Calls `fn` until it resolves or `ms` pass (a daemon that prints no "ready" line). */
async function until<T>(fn: () => Promise<T>, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > end) throw new Error(`${what}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** As root over D-Bus: every user may read TIME (the one-shot runs as nobody). */
async function allowTime(address: string): Promise<void> {
  const admin = await until(() => GeopmClient.connect({ address }), 60_000, 'connecting');
  try {
    await until(() => admin.platformSetGroupAccess('', ['TIME'], []), 60_000, 'PlatformSetGroupAccess');
  } finally {
    admin.close();
  }
}

async function withBatchClient(side: Omit<Side, 'batch'>): Promise<Side> {
  const batch = LineProcess.exec(
    side.inside([process.execPath, join(REPO, 'bench/side-by-side-client.mjs')]),
  );
  await batch.next();
  return { ...side, batch };
}

async function startJoulegate(work: string): Promise<Side> {
  const running = await startDaemon(
    work,
    { JOULEGATE_RUN_PATH: '/run/geopm', JOULEGATE_CONFIG_PATH: '/etc/geopm' },
    namespaced(work),
  );
  const pid = running.daemon.pid!;
  // The daemon's log from here on: which loop each batch server sampled in is in its lines.
  let log = '';
  running.daemon.stderr?.setEncoding('utf8').on('data', (text: string) => {
    log = (log + text).slice(-200_000);
  });
  await allowTime(running.address);
  const side = {
    kind: 'joulegate' as const,
    address: running.address,
    pid,
    inside: insideOf(pid, running.address),
    session: ['sh', join(REPO, 'bin/joulegate'), 'session'],
    logTail: () => log,
    stop: () => running.stop(),
  };
  try {
    return await withBatchClient(side);
  } catch (err) {
    await running.stop();
    throw err;
  }
}

async function startGeopm(ref: string, work: string): Promise<Side> {
  mkdirSync(join(work, 'bin.upper'));
  for (const tool of ['geopmread', 'geopmwrite'])
    symlinkSync(join(ref, 'install/bin', tool), join(work, 'bin.upper', tool));
  const bus = await startBus(work);
  const daemon: ChildProcess = spawn(...spawnArgs([...namespaced(work), join(ref, 'bin/geopmd')]), {
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: bus.address, GEOPM_REF: ref },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let log = '';
  daemon.stderr!.setEncoding('utf8').on('data', (d: string) => {
    log = (log + d).slice(-4000);
  });
  const stop = () => bus.stop(daemon);
  try {
    await allowTime(bus.address).catch((err: Error) => {
      throw new Error(`geopmd did not come up (${err.message}); its log: ${log}`);
    });
    const pid = daemon.pid!;
    return await withBatchClient({
      kind: 'geopm',
      address: bus.address,
      pid,
      inside: insideOf(pid, bus.address),
      session: [join(ref, 'bin/geopmsession')],
      logTail: () => log.replace(/\0/g, ''),
      stop,
    });
  } catch (err) {
    await stop();
    throw err;
  }
}

const spawnArgs = (argv: string[]): [string, string[]] => [argv[0]!, argv.slice(1)];

const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/**
 * Every order of `items` (2: A B, B A; 3: all six), so that rounds taking them in turn time each
 * item in each place, and right after each other item, equally often.
 */
function everyOrder<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((first, i) =>
    everyOrder([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [first, ...rest]),
  );
}

/**
 * Runs `measure` for each callee, `rounds` times, round r in the r-th of every order in turn
 * (under load, which daemon a round follows moves its tail: docs/geopm-side-by-side.md);
 * each round's samples by kind.
 */
async function interleaved<C extends Callee>(
  callees: C[],
  rounds: number,
  measure: (callee: C) => Promise<number[]>,
): Promise<Map<string, number[][]>> {
  const all = new Map<string, number[][]>(callees.map((c) => [c.kind, []]));
  const orders = everyOrder(callees);
  for (let r = 0; r < rounds; r++)
    for (const callee of orders[r % orders.length]!) all.get(callee.kind)!.push(await measure(callee));
  return all;
}

/**
 * One figure for each side (`summary` of its samples), the ratios joulegate / GEOPM of each
 * number in it (for p50/p99, with how far they could move: round-interval.ts), and the load
 * average before and after; a floor daemon among the callees is timed in the same rounds and
 * reported as `daemon_floor` (see withFloor).
 */
async function figure<C extends Callee, S extends Record<string, number>>(
  callees: C[],
  rounds: number,
  measure: (callee: C) => Promise<number[]>,
  summary: (samples: number[]) => S,
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const before = loadAverage();
  const byRound = await interleaved(callees, rounds, measure);
  const out: Record<string, unknown> = { ...extra };
  for (const [kind, values] of byRound) {
    const all = values.flat();
    if (kind !== 'floor') out[kind] = { samples: all.length, ...summary(all) };
  }
  const jg = out.joulegate as S;
  const geopm = out.geopm as S | undefined;
  if (geopm) {
    out.ratio = Object.fromEntries(
      Object.keys(jg)
        .filter((k) => k !== 'samples')
        .map((k) => [k, round(jg[k]! / geopm[k]!)]),
    );
    const intervals = quantileIntervals(byRound.get('joulegate')!, byRound.get('geopm')!, Object.keys(jg));
    if (intervals) out.ratio_interval_90 = intervals;
  }
  const floor = byRound.get('floor');
  if (floor) out.daemon_floor = withFloor(floor, byRound.get('joulegate')!, out);
  out.load_average_1min = { before, after: loadAverage() };
  return out;
}

/** The ratio intervals of the p50 and p99 among `keys`, if there are any to give. */
function quantileIntervals(a: number[][], b: number[][], keys: string[]) {
  const out: Record<string, [number, number]> = {};
  for (const [key, q] of [
    ['p50_us', 0.5],
    ['p99_us', 0.99],
  ] as const) {
    const interval = keys.includes(key) ? quantileRatioInterval(a, b, q) : undefined;
    if (interval) out[key] = interval;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

const latencyMs = (values: number[]) => ({
  p50_ms: round(median(values)),
  p99_ms: round(
    [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(0.99 * values.length))]!,
  ),
});

/**
 * The "stop" times (connect, read, "q", StopBatch), StopBatch refusals, failed starts, buffers
 * that took over 2 s to go and leftover batch files removed, of every round, by side.
 */
const stops = new Map<
  Kind,
  { ms: number[]; refused: number; startFailed: string[]; slowCleanups: number; leftoversRemoved: number }
>();

/** Most failed starts a side may have before the figure is given up (a third of the 75 made). */
const MAX_FAILED_STARTS = 25;

/**
 * Failed starts by side: those so far, or, given an earlier result, those since (with the
 * first message among them). They are not in the StartBatch figures' samples.
 */
function failedStarts(
  since?: Record<string, { count: number; leftovers_removed: number }>,
): Record<string, { count: number; first?: string; leftovers_removed: number }> {
  return Object.fromEntries(
    [...stops].map(([kind, { startFailed, leftoversRemoved }]) => {
      const from = since?.[kind]?.count ?? 0;
      const removed = leftoversRemoved - (since?.[kind]?.leftovers_removed ?? 0);
      return [
        kind,
        { count: startFailed.length - from, first: startFailed[from], leftovers_removed: removed },
      ];
    }),
  );
}

/** One `starts N PAUSE_MS` of the side's batch client: the StartBatch times (the stops are kept). */
async function startRound(side: Side, count: number, pauseMs: number): Promise<number[]> {
  side.batch.send(`starts ${count} ${pauseMs}`);
  const out = await side.batch.next<{
    start?: number[];
    stop: number[];
    stopRefused: number;
    startFailed?: string[];
    slowCleanups?: number;
    leftoversRemoved?: number;
    error?: string;
  }>();
  if (!out.start) throw new Error(`${side.kind}: starts: ${out.error}; daemon log: ${side.logTail()}`);
  const kept = stops.get(side.kind) ?? {
    ms: [],
    refused: 0,
    startFailed: [],
    slowCleanups: 0,
    leftoversRemoved: 0,
  };
  kept.ms.push(...out.stop);
  kept.refused += out.stopRefused;
  kept.slowCleanups += out.slowCleanups ?? 0;
  kept.leftoversRemoved += out.leftoversRemoved ?? 0;
  kept.startFailed.push(...(out.startFailed ?? []));
  stops.set(side.kind, kept);
  if (kept.startFailed.length > MAX_FAILED_STARTS) {
    throw new Error(
      `${side.kind}: starts: ${kept.startFailed.length} PlatformStartBatch calls failed, the first: ${kept.startFailed[0]}; the last: ${kept.startFailed.at(-1)}; daemon log: ${side.logTail()}`,
    );
  }
  return out.start;
}

/**
 * ReadSignal by one client of each side, in process (the bus socket is outside the namespaces);
 * with `floor`, the floor daemon is timed in the same rounds, as in the C figures.
 */
async function readSignalOne(sides: Side[], floor: Callee | undefined) {
  const callees: Callee[] = [...sides, ...(floor ? [floor] : [])];
  const clients = new Map<string, Awaited<ReturnType<typeof GeopmClient.connect>>>();
  for (const callee of callees) {
    const client = await GeopmClient.connect({ address: callee.address });
    await client.platformOpenSession();
    clients.set(callee.kind, client);
  }
  // The machine's own tail for a D-Bus round trip: a Ping that each side's dbus-daemon answers
  // itself, timed in the same rounds (no daemon behind it).
  const buses = new Map<string, Bus>();
  for (const callee of callees) buses.set(callee.kind, await DBusConnection.connect(callee.address));
  const busPing = (bus: Bus) =>
    bus.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus.Peer',
      member: 'Ping',
    });
  const rounds = 6;
  /** One round: each call timed, then a bus Ping timed. */
  const round = async (callee: Callee) => {
    const client = clients.get(callee.kind)!;
    const bus = buses.get(callee.kind)!;
    const us: number[] = [];
    const pings: number[] = [];
    for (let k = 0; k < CALLS / rounds; k++) {
      let t = performance.now();
      await client.platformReadSignal('TIME', 0, 0);
      us.push((performance.now() - t) * 1000);
      t = performance.now();
      await busPing(bus);
      pings.push((performance.now() - t) * 1000);
    }
    return { us, pings };
  };
  try {
    // Untimed rounds of the same code first: this client's JIT compiles the code it times while
    // it runs, and the first side's rounds would pay for both (see readSignalAfterStart).
    for (const callee of callees)
      for (let done = 0; done < NODE_CLIENT_WARM_UP; done += CALLS / rounds) await round(callee);
    const busPings = new Map<string, number[]>();
    const out = await figure(
      callees,
      rounds,
      async (callee) => {
        const { us, pings } = await round(callee);
        busPings.set(callee.kind, [...(busPings.get(callee.kind) ?? []), ...pings]);
        return us;
      },
      withTailShare,
      { calls_each: CALLS, name: 'PlatformReadSignal("TIME", board, 0)' },
    );
    out.bus_ping_floor = {
      how: "org.freedesktop.DBus.Peer.Ping answered by the side's dbus-daemon itself, one after each ReadSignal: the machine's tail for a round trip with no daemon behind it",
      ...Object.fromEntries([...busPings].map(([kind, us]) => [kind, percentiles(us, 1)])),
    };
    return out;
  } finally {
    for (const bus of buses.values()) bus.close();
    for (const client of clients.values()) {
      await client.platformCloseSession().catch(() => {});
      client.close();
    }
  }
}

/** The C programs that talk D-Bus through sd-bus: the read client and the floor daemon. */
interface CPrograms {
  client: string;
  floorDaemon: string;
}

/**
 * bench/c/dbus_read_client.c and bench/c/dbus_floor_daemon.c built into `dir`, or why they
 * could not be: they need gcc and sd-bus's headers (Debian's libsystemd-dev, which GEOPM's build
 * needs too).
 */
function buildCPrograms(dir: string): CPrograms | { skipped: string } {
  const built = { client: join(dir, 'dbus_read_client'), floorDaemon: join(dir, 'dbus_floor_daemon') };
  for (const [path, source] of [
    [built.client, 'dbus_read_client.c'],
    [built.floorDaemon, 'dbus_floor_daemon.c'],
  ] as const) {
    const r = spawnSync('gcc', ['-O2', '-Wall', '-o', path, join(REPO, 'bench/c', source), '-lsystemd'], {
      encoding: 'utf8',
    });
    if (r.error || r.status !== 0)
      return {
        skipped: `no C client: gcc with sd-bus (libsystemd-dev) failed on ${source}: ${(r.stderr || String(r.error)).trim().split('\n')[0]}`,
      };
  }
  return built;
}

/** A D-Bus peer the C client can call: a side, or the floor daemon. */
interface Callee {
  kind: string;
  address: string;
}

/**
 * The floor daemon (bench/c/dbus_floor_daemon.c: answers at once, no work, no state) on a bus
 * of its own, each in a session of its own as the daemons are.
 */
async function startFloorDaemon(
  work: string,
  path: string,
): Promise<Callee & { pid: number; stop(): Promise<void> }> {
  const dir = join(work, 'floor');
  mkdirSync(dir, { mode: 0o755 });
  const bus = await startBus(dir);
  const daemon = spawn(path, [bus.address], {
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: SERVICE_SESSIONS,
  });
  try {
    await firstLine(daemon, 'stdout', /^ready/);
  } catch (err) {
    await bus.stop(daemon);
    throw new Error(`floor daemon: ${(err as Error).message}`);
  }
  return { kind: 'floor', address: bus.address, pid: daemon.pid!, stop: () => bus.stop(daemon) };
}

/** The C client's timings of one run against `side`, by kind ("r" ReadSignal, "p" bus Ping), µs. */
function runCClient(client: string, side: Callee, args: string[]): (kind: 'r' | 'p') => number[] {
  const r = spawnSync(client, [side.address, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${side.kind}: C client exited ${r.status}: ${r.stderr.trim()}`);
  const lines = r.stdout.split('\n');
  return (kind) => lines.filter((l) => l.startsWith(`${kind} `)).map((l) => Number(l.slice(2)));
}

/** p50/p99 and the share of calls over 1 ms. */
const withTailShare = (us: number[]) => ({
  ...percentiles(us, 1),
  over_1ms_share: round(us.filter((u) => u > 1000).length / us.length, 4),
});

/**
 * Each fresh daemon's first ReadSignal calls: WARM_UP_CALLS from one client (each followed by a
 * bus Ping), in blocks of 1000, then WARM_UP_CONNECTIONS batches of 50 new clients (a connection
 * and a session each, 20 + 40 calls, closed), each batch's calls summed up; from the C client
 * (the Node.js one, one connection at a time, if it could not be built). joulegated is
 * JavaScript: V8 compiles a function on helper threads once it has run often, so the hot call
 * path is compiled in the first few thousand calls, and the path each new client takes
 * (connection, session, close) only after a few hundred clients. A compile holds a CPU for
 * 1-20 ms, and a call whose wakeup lands behind it waits (on 2 cores: 2-4 % of the first 1000
 * calls take over 1 ms, 0-0.1 % once warm). That is a real cost after each daemon start, so it
 * is a figure of its own; the ReadSignal figures after it measure warm daemons (and a warm
 * Node.js client), as a long-running daemon serves. geopmd (Python) has no JIT.
 */
async function readSignalAfterStart(sides: Side[], client: string | undefined) {
  const before = loadAverage();
  const out: Record<string, unknown> = {
    how: `each daemon's first ${WARM_UP_CALLS} PlatformReadSignal("TIME", board, 0) calls after its start (the daemon had served only the bench's setup) from one client, then ${WARM_UP_CONNECTIONS} batches of 50 new clients (connect, open a session, 60 calls, close), ${client ? 'by bench/c/dbus_read_client.c (a bus Ping after each call of the one client)' : "by the bench's Node.js client (no C client), one connection at a time"}; p99 and the share over 1 ms of each block of 1000 calls and of each batch, in order`,
  };
  for (const side of sides) {
    const us = client
      ? runCClient(client, side, [String(WARM_UP_CALLS), '0'])('r')
      : await nodeClientCalls(side, WARM_UP_CALLS);
    const blocks = [];
    for (let at = 0; at < us.length; at += 1000) blocks.push(withTailShare(us.slice(at, at + 1000)));
    const batches = [];
    for (let b = 0; b < WARM_UP_CONNECTIONS; b++) {
      if (client) batches.push(withTailShare(runCClient(client, side, ['40', '20', '50'])('r')));
      else {
        const batch: number[] = [];
        for (let c = 0; c < 50; c++) batch.push(...(await nodeClientCalls(side, 60)).slice(20));
        batches.push(withTailShare(batch));
      }
    }
    out[side.kind] = {
      one_client: withTailShare(us),
      blocks_p99_us: blocks.map((b) => b.p99_us),
      blocks_over_1ms_share: blocks.map((b) => b.over_1ms_share),
      new_clients_batches_p99_us: batches.map((b) => b.p99_us),
      new_clients_batches_over_1ms_share: batches.map((b) => b.over_1ms_share),
    };
  }
  out.load_average_1min = { before, after: loadAverage() };
  return out;
}

/** `calls` ReadSignal calls of a Node.js client of its own (a session opened first), each one's µs. */
async function nodeClientCalls(side: Side, calls: number): Promise<number[]> {
  const client = await GeopmClient.connect({ address: side.address });
  try {
    await client.platformOpenSession();
    const us: number[] = [];
    for (let k = 0; k < calls; k++) {
      const t = performance.now();
      await client.platformReadSignal('TIME', 0, 0);
      us.push((performance.now() - t) * 1000);
    }
    await client.platformCloseSession();
    return us;
  } finally {
    client.close();
  }
}

/**
 * ReadSignal p50/p99 of 1 client that adds no tail of its own: the C client, one process per
 * round (interleaved), with a bus Ping after each call as the bus's own floor. A Node.js client
 * adds its own JIT warm-up to both daemons' tails alike (see readSignalAfterStart). The rounds
 * also time the floor daemon, in every order with the sides: what any daemon's call costs on
 * this machine before the daemon does any work.
 */
async function readSignalOneC(sides: Side[], c: CPrograms, floor: Callee) {
  const rounds = 6;
  const args = [String(C_CALLS / rounds), '200'];
  const pings = new Map<string, number[]>();
  const out = await figure(
    [...sides, floor],
    rounds,
    async (callee) => {
      const us = runCClient(c.client, callee, args);
      pings.set(callee.kind, [...(pings.get(callee.kind) ?? []), ...us('p')]);
      return us('r');
    },
    withTailShare,
    { calls_each: C_CALLS, client: 'bench/c/dbus_read_client.c (sd-bus, blocking calls)' },
  );
  out.bus_ping_floor = Object.fromEntries([...pings].map(([kind, us]) => [kind, percentiles(us, 1)]));
  return out;
}

/** 50 C clients of each side, a process and a session each, 40 back-to-back calls each per round. */
async function readSignalFiftyC(sides: Side[], c: CPrograms, floor: Callee) {
  const args = ['40', '20', '50'];
  return figure(
    [...sides, floor],
    6,
    async (callee) => runCClient(c.client, callee, args)('r'),
    withTailShare,
    {
      clients: 50,
      how: 'bench/c/dbus_read_client.c: 50 processes, each its own connection and session, warmed up, then all at once 40 back-to-back calls each per round',
    },
  );
}

/**
 * CPU that one process has used so far, all threads, ns: schedstat's run time is exact, where
 * utime/stime are clock ticks. Throws once the process is gone.
 */
function processCpuNs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`))
    ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  return ns;
}

/** CPU that `pid` and every process below it have used, ns (processCpuNs). */
function treeCpuNs(pid: number): number {
  let ns = 0;
  for (const member of descendants(processTable(), pid)) {
    try {
      ns += processCpuNs(member);
    } catch {
      // gone meanwhile
    }
  }
  return ns;
}

/**
 * What a client's life costs each daemon: per round, 50 C clients at once each connect, open a
 * session, close it and leave, with no call in between; the daemon's CPU (its process tree, all
 * threads) over the round, per client. The clients of the 50-client ReadSignal figures live such
 * lives too, and the first to finish close while the others' calls are still timed.
 */
async function clientLifeCpu(sides: Side[], c: CPrograms, floor: Callee & { pid: number }) {
  const callees = [...sides, floor];
  const life = (callee: Callee & { pid: number }) => {
    const before = treeCpuNs(callee.pid);
    runCClient(c.client, callee, ['0', '0', '50']);
    return (treeCpuNs(callee.pid) - before) / 1000 / 50;
  };
  for (const callee of callees) life(callee); // untimed: the paths a new client takes, compiled
  const before = loadAverage();
  const byRound = await interleaved(callees, 6, async (callee) => [life(callee)]);
  const perClient = (kind: string) => round(median(byRound.get(kind)!.flat()), 1);
  const out: Record<string, unknown> = {
    how: "bench/c/dbus_read_client.c with no calls: per round 50 processes at once, each connecting, opening a session, closing it and disconnecting; the daemon's CPU (schedstat, its process tree, all threads) over the round per client, median of 6 rounds in every order, after one untimed round",
  };
  for (const callee of callees) out[callee.kind] = { cpu_per_client_us: perClient(callee.kind) };
  if (byRound.has('geopm')) out.ratio = round(perClient('joulegate') / perClient('geopm'));
  out.joulegate_over_floor = round(perClient('joulegate') / perClient('floor'));
  out.load_average_1min = { before, after: loadAverage() };
  return out;
}

/**
 * The floor daemon's figure (bench/c/dbus_floor_daemon.c, timed in the same rounds), its p99 as a
 * share of GEOPM's (above 0.5, no daemon could show half GEOPM's p99 in that run), and how far
 * joulegated's p99 over the floor's could move (round-interval.ts).
 */
function withFloor(rounds: number[][], joulegateRounds: number[][], figureOut: Record<string, unknown>) {
  const floor = withTailShare(rounds.flat());
  const geopm = figureOut.geopm as { p99_us: number } | undefined;
  const overFloor = quantileRatioInterval(joulegateRounds, rounds, 0.99);
  return {
    how: 'bench/c/dbus_floor_daemon.c on a bus of its own, in the same rounds: a service that answers at once with no work of its own (the cost of the bus crossings and wakeups any daemon pays)',
    ...floor,
    ...(geopm ? { p99_over_geopm_p99: round(floor.p99_us / geopm.p99_us) } : {}),
    ...(overFloor ? { joulegate_p99_over_floor_p99_interval_90: overFloor } : {}),
  };
}

/**
 * 50 clients of each side: 5 processes × 10 connections (bench/dbus-readers.mjs), 40 calls each;
 * with `floor`, 50 more against the floor daemon, timed in the same rounds.
 */
async function readSignalFifty(sides: Side[], floor: Callee | undefined) {
  const callees: Callee[] = [...sides, ...(floor ? [floor] : [])];
  const readers = new Map<string, LineProcess[]>();
  for (const side of callees) {
    const env = ['env', `DBUS_SYSTEM_BUS_ADDRESS=${side.address}`];
    const procs = Array.from({ length: 5 }, () =>
      LineProcess.start(env, join(REPO, 'bench/dbus-readers.mjs'), ['10', '40']),
    );
    readers.set(side.kind, procs);
    await Promise.all(procs.map((p) => p.next()));
  }
  /** One round: every connection of every reader makes its 40 calls at once; each call's µs. */
  const round = async (callee: Callee) => {
    const procs = readers.get(callee.kind)!;
    for (const p of procs) p.send('read');
    return (await Promise.all(procs.map((p) => p.next<{ us: number[] }>()))).flatMap((o) => o.us);
  };
  try {
    // Untimed rounds first, as readSignalOne does: 400 calls per reader process each.
    for (const callee of callees)
      for (let done = 0; done < NODE_CLIENT_WARM_UP; done += 400) await round(callee);
    return await figure(callees, 6, round, withTailShare, {
      clients: 50,
      how: `5 processes x 10 connections, ${NODE_CLIENT_WARM_UP} calls per process in untimed rounds, then 40 back-to-back calls per connection per round`,
    });
  } finally {
    for (const procs of readers.values()) await Promise.all(procs.map((p) => p.end()));
  }
}

/** What one process has used so far: CPU (all threads, ns), and its main thread's switches and migrations. */
interface Usage {
  cpuNs: number;
  voluntary: number;
  involuntary: number;
  migrations: number;
}

/** Each process's parent and the CPU it last ran on (stat fields 4 and 39). */
function processTable(): Map<number, { ppid: number; cpu: number }> {
  const out = new Map<number, { ppid: number; cpu: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(entry), { ppid: Number(fields[1]), cpu: Number(fields[36]) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** `pid` and every process below it. */
function descendants(table: Map<number, { ppid: number }>, pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++)
    for (const [child, { ppid }] of table) if (ppid === out[i]) out.push(child);
  return out;
}

/** A process's voluntary switches so far (all threads); NaN once it is gone. */
function voluntarySwitches(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/** Direct children of `pid` (from `table`) and their usage so far. */
function childUsage(pid: number, table: Map<number, { ppid: number }>): Map<number, Usage> {
  const out = new Map<number, Usage>();
  for (const [child, { ppid }] of table) {
    if (ppid !== pid) continue;
    const entry = String(child);
    try {
      const cpuNs = processCpuNs(child);
      const sched = readFileSync(`/proc/${entry}/sched`, 'utf8');
      const field = (name: string) =>
        Number(new RegExp(`^${name}\\s*:\\s*(\\d+)`, 'm').exec(sched)?.[1] ?? 0);
      out.set(Number(entry), {
        cpuNs,
        voluntary: field('nr_voluntary_switches'),
        involuntary: field('nr_involuntary_switches'),
        migrations: field('se\\.nr_migrations'),
      });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** How joulegate's servers sampled in the CPU rounds, from the daemon's release lines. */
const sampledIn: string[] = [];

/** One CPU round: the server's CPU per sample, and its switches and migrations per sample. */
interface CpuRound {
  /** From the first to the last sight of the server, over the samples printed. */
  us: number;
  /** In the session's steady state (2 s to 9 s), over that window's samples. */
  steadyUs: number;
  /** CPU ms the daemon's other children used in that window (a spare loading, say). */
  othersMs: number;
  samples: number;
  voluntary: number;
  involuntary: number;
  migrations: number;
  /**
   * Share of the steady window's polls that saw the server and its client last on the same CPU.
   * A wakeup across CPUs costs the waker more (an IPI, a VM exit on a VM), so rounds differ by
   * where the scheduler happened to place the two.
   */
  sameCpu: number;
}

/** The CPUs this bench may use (its own affinity, as the kernel lists it: "0-3,8"), and their numbers. */
const ALLOWED_CPUS = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]!;
const allowedCpuNumbers = ALLOWED_CPUS.split(',').flatMap((range) => {
  const [from, to = from] = range.split('-').map(Number) as [number, number?];
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
});

/**
 * Where a CPU round runs: `free` leaves it to the scheduler; `same-cpu` pins the client and the
 * daemon (all its processes, so the server forked or handed out for the round) to the first CPU
 * this bench may use; `other-cpus` pins the client there and the daemon to the second. Under
 * load the scheduler's choice decides most of a round's figure (a wakeup across CPUs costs the
 * waker an IPI, a VM exit on a VM), so each side is also measured at each fixed placement.
 * After each round the daemon gets the bench's own CPU list back.
 */
type Placement = 'free' | 'same-cpu' | 'other-cpus';
const [firstCpu, secondCpu = firstCpu] = allowedCpuNumbers as [number, number?];
const PLACEMENTS: Record<Placement, { client: number; daemon: number } | undefined> = {
  free: undefined,
  'same-cpu': { client: firstCpu, daemon: firstCpu },
  'other-cpus': { client: firstCpu, daemon: secondCpu },
};

/** Sets the CPU list of every thread of `pid` and of every process below it; new ones inherit it. */
function pinTree(pid: number, cpus: string): void {
  for (const each of descendants(processTable(), pid)) {
    const r = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(each)], { encoding: 'utf8' });
    // A process that ended meanwhile is no longer part of the round.
    if (r.status !== 0 && existsSync(`/proc/${each}`)) throw new Error(`taskset ${each}: ${r.stderr.trim()}`);
  }
}

/**
 * `session -p 0.001 -t 10` on SERVICE::TIME as nobody (the service backend serves non-root
 * users) in the side's namespace, with GEOPM's geopmsession as the client of both daemons when
 * GEOPM_REF is set (as issue 27 measured: the same client, so only the servers differ), else
 * joulegate's. The server is the daemon's child woken most often while it ran (a joulegated
 * may load a spare server meanwhile, which is not the one serving); its usage from first to
 * last sight, polled every 50 ms.
 */
async function cpuPerSample(side: Side, placement: Placement): Promise<CpuRound> {
  const session = GEOPM_REF ? [join(GEOPM_REF, 'bin/geopmsession')] : side.session;
  const pinned = PLACEMENTS[placement];
  if (pinned) pinTree(side.pid, String(pinned.daemon));
  try {
    return await sessionRound(side, [
      ...(pinned ? ['taskset', '-c', String(pinned.client)] : []),
      ...side.inside([...session, '-p', '0.001', '-t', '10'], NOBODY),
    ]);
  } finally {
    if (pinned) pinTree(side.pid, ALLOWED_CPUS);
  }
}

async function sessionRound(side: Side, argv: string[]): Promise<CpuRound> {
  const child = spawn(...spawnArgs(argv), { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end('SERVICE::TIME board 0\n');
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const first = new Map<number, Usage>();
  const last = new Map<number, Usage>();
  // Each poll's usage, by time since the client was started, for the steady-state window.
  const polls: { at: number; usage: Map<number, Usage>; cpus: Map<number, number> }[] = [];
  const clientSwitches = new Map<number, number>();
  const started = performance.now();
  const poll = setInterval(() => {
    const table = processTable();
    const usage = childUsage(side.pid, table);
    // Where the server candidates and the client's processes (the wrappers and the client) last ran.
    const clientTree = descendants(table, child.pid!);
    const cpus = new Map<number, number>();
    for (const pid of [...usage.keys(), ...clientTree]) cpus.set(pid, table.get(pid)!.cpu);
    for (const pid of clientTree) {
      const switches = voluntarySwitches(pid);
      if (switches >= 0) clientSwitches.set(pid, switches);
    }
    polls.push({ at: performance.now() - started, usage, cpus });
    for (const [pid, u] of usage) {
      if (!first.has(pid)) first.set(pid, u);
      last.set(pid, u);
    }
  }, 50);
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  clearInterval(poll);
  if (code !== 0) throw new Error(`${side.kind} session exited ${code}: ${err.slice(-500)}`);
  const samples = out.split('\n').filter((l) => /^[\d.eE+-]+$/.test(l.trim()) && l.trim() !== '').length;
  const delta = (pid: number, key: keyof Usage) => last.get(pid)![key] - first.get(pid)![key];
  const server = [...last.keys()].reduce((a, b) => (delta(b, 'voluntary') > delta(a, 'voluntary') ? b : a));
  if (side.kind === 'joulegate') {
    const release = new RegExp(
      `batch server ${server} of client \\d+ released \\([^;]*; ([^\\n]*)\\)\\n`,
      'g',
    );
    sampledIn.push(
      [...side.logTail().matchAll(release)].at(-1)?.[1] ?? `no release line for server ${server}`,
    );
  }
  // Steady state: from 2 s after the client started (start-up and the first samples done) to
  // 1 s before its last second; a sample is one voluntary switch of the server (it blocks in
  // read(2) for each request), which counts the samples of exactly that window.
  const inWindow = polls.filter((p) => p.usage.has(server) && p.at >= 2000 && p.at <= 9000);
  const [a, b] = [inWindow[0]?.usage.get(server), inWindow.at(-1)?.usage.get(server)];
  // What the daemon's other children (a spare loading, a kept server reloading) used meanwhile.
  const othersMs =
    inWindow.length < 2
      ? NaN
      : [...inWindow.at(-1)!.usage]
          .filter(([pid]) => pid !== server)
          .reduce((sum, [pid, u]) => sum + (u.cpuNs - (inWindow[0]!.usage.get(pid)?.cpuNs ?? u.cpuNs)), 0) /
        1e6;
  const steady =
    a && b && b.voluntary > a.voluntary ? (b.cpuNs - a.cpuNs) / 1000 / (b.voluntary - a.voluntary) : NaN;
  // The client is the spawned process (exec'd through nsenter, setpriv and env) or the one below
  // it that blocked most often (once per sample).
  const client = [...clientSwitches].reduce((a, b) => (b[1] > a[1] ? b : a), [0, -1])[0];
  const placed = inWindow.filter((p) => p.cpus.has(server) && p.cpus.has(client));
  const sameCpu = placed.filter((p) => p.cpus.get(server) === p.cpus.get(client)).length / placed.length;
  return {
    sameCpu,
    us: delta(server, 'cpuNs') / 1000 / samples,
    steadyUs: steady,
    othersMs,
    samples,
    voluntary: delta(server, 'voluntary') / samples,
    involuntary: delta(server, 'involuntary') / samples,
    migrations: delta(server, 'migrations') / samples,
  };
}

function wallMs(argv: string[], input: string): number {
  const start = performance.now();
  const r = spawnSync(argv[0]!, argv.slice(1), { input, encoding: 'utf8' });
  const took = performance.now() - start;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return took;
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-side-by-side-'));
  chmodSync(work, 0o755); // nobody reaches the bus sockets
  const sides: Side[] = [];
  try {
    const sideDir = (kind: Kind) => {
      const dir = join(work, kind);
      mkdirSync(dir, { mode: 0o755 });
      return dir;
    };
    sides.push(await startJoulegate(sideDir('joulegate')));
    if (GEOPM_REF) {
      if (!existsSync(join(GEOPM_REF, 'bin/geopmd')))
        throw new Error(`GEOPM_REF=${GEOPM_REF} has no bin/geopmd (docs/geopm-side-by-side.md)`);
      sides.push(await startGeopm(GEOPM_REF, sideDir('geopm')));
    }
    const loadBefore = loadAverage();
    const skipped = { skipped: `--only ${ONLY}` };
    let afterStart: Record<string, unknown> = skipped;
    let one: Record<string, unknown> = skipped;
    let fifty: Record<string, unknown> = skipped;
    let oneC: Record<string, unknown> = skipped;
    let fiftyC: Record<string, unknown> = skipped;
    let lives: Record<string, unknown> = skipped;
    if (runs('read')) {
      const built = buildCPrograms(work);
      afterStart = await readSignalAfterStart(sides, 'skipped' in built ? undefined : built.client);
      const floor = 'skipped' in built ? undefined : await startFloorDaemon(work, built.floorDaemon);
      try {
        if ('skipped' in built) oneC = fiftyC = lives = built;
        else if (floor) {
          oneC = await readSignalOneC(sides, built, floor);
          fiftyC = await readSignalFiftyC(sides, built, floor);
          lives = await clientLifeCpu(sides, built, floor);
        }
        one = await readSignalOne(sides, floor);
        fifty = await readSignalFifty(sides, floor);
      } finally {
        await floor?.stop();
      }
    }
    let burst: Record<string, unknown> = skipped;
    let paused: Record<string, unknown> = skipped;
    const cycles: Record<string, unknown> = {
      how: 'after each start above: BatchClient connect, one read, "q" to the server, PlatformStopBatch',
    };
    if (runs('starts')) {
      for (const side of sides) await startRound(side, 3, 0);
      stops.clear();
      let failedBefore = failedStarts();
      burst = await figure(sides, 2, (s) => startRound(s, 30, 0), latencyMs, {
        how: 'per round 30 PlatformStartBatch([TIME]), each ended at once as GEOPM clients do (see connect_quit_stop_batch)',
      });
      burst.start_batch_failed = failedStarts(failedBefore);
      failedBefore = failedStarts();
      paused = await figure(sides, 2, (s) => startRound(s, 5, 500), latencyMs, {
        how: 'per round 5 starts, each after a 0.5 s pause',
      });
      paused.start_batch_failed = failedStarts(failedBefore);
      for (const [kind, { ms, refused, slowCleanups }] of stops)
        cycles[kind] = {
          samples: ms.length,
          ...latencyMs(ms),
          stop_batch_refused: refused,
          buffer_gone_after_2s: slowCleanups,
        };
      if (stops.has('geopm')) {
        const [jg, geopm] = [cycles.joulegate, cycles.geopm] as { p50_ms: number; p99_ms: number }[];
        cycles.ratio = {
          p50_ms: round(jg!.p50_ms / geopm!.p50_ms),
          p99_ms: round(jg!.p99_ms / geopm!.p99_ms),
        };
      }
    } else Object.assign(cycles, skipped);
    let cpu: Record<string, unknown> = skipped;
    if (runs('cpu')) {
      const rounds = new Map<Kind, (CpuRound & { placement: Placement })[]>();
      const placed = async (placement: Placement, count: number) =>
        figure(
          sides,
          count,
          async (side) => {
            const r = await cpuPerSample(side, placement);
            rounds.set(side.kind, [...(rounds.get(side.kind) ?? []), { ...r, placement }]);
            return [r.steadyUs];
          },
          (us) => ({ us_per_sample: round(median(us), 1) }),
        );
      cpu = {
        how: `session -p 0.001 -t 10 on "SERVICE::TIME board 0" by ${GEOPM_REF ? "GEOPM's geopmsession against both daemons" : "joulegate's session"}; the server's CPU (all threads, schedstat) per sample in the steady state (2 s to 9 s after the client started; the samples counted as the server's voluntary switches, one per request), median of the rounds, with the client and the server placed by the scheduler; at_fixed_placement: the same with both pinned to one CPU, and with the client and the daemon on two (at_fixed_placement.cpus); rounds[].session_us: from the first to the last sight of the server over the samples printed (start-up and the end included: a server loaded while the client waited counts whole); rounds[].same_cpu_as_client: share of the window's polls that saw the server and the client last on the same CPU`,
        ...(await placed('free', CPU_ROUNDS * sides.length)),
        at_fixed_placement: {
          'same-cpu': await placed('same-cpu', CPU_ROUNDS),
          'other-cpus': await placed('other-cpus', CPU_ROUNDS),
          cpus: { client: firstCpu, daemon_with_other_cpus: secondCpu, bench_may_use: ALLOWED_CPUS },
        },
      };
      cpu.rounds = Object.fromEntries(
        [...rounds].map(([kind, rs]) => [
          kind,
          rs.map((r) => ({
            placement: r.placement,
            steady_us: round(r.steadyUs, 1),
            session_us: round(r.us, 1),
            others_in_window_ms: round(r.othersMs, 1),
            samples: r.samples,
            voluntary_per_sample: round(r.voluntary, 3),
            involuntary_per_sample: round(r.involuntary, 3),
            migrations_per_sample: round(r.migrations, 3),
            same_cpu_as_client: round(r.sameCpu, 2),
          })),
        ]),
      );
      cpu.session_us_median = Object.fromEntries(
        [...rounds].map(([kind, rs]) => [
          kind,
          round(median(rs.filter((r) => r.placement === 'free').map((r) => r.us)), 1),
        ]),
      );
      cpu.joulegate_sampled = sampledIn;
    }
    const oneShot = runs('one-shot')
      ? await figure(
          sides,
          ONE_SHOTS,
          async (side) => {
            // A pause as between two commands of a script (a joulegated loads its next spare server).
            await new Promise((r) => setTimeout(r, 500));
            return [wallMs(side.inside([...side.session, '-t', '0'], NOBODY), 'TIME board 0\n')];
          },
          (ms) => ({ median_ms: round(median(ms), 1) }),
          { how: `session -t 0 of "TIME board 0" as nobody, in the daemon's namespace; ${ONE_SHOTS} runs` },
        )
      : skipped;
    const pss = Object.fromEntries(sides.map((s) => [s.kind, memoryOf(s.pid)]));
    const pssRatio = pss.geopm ? round(pss.joulegate!.pss_mb / pss.geopm.pss_mb) : undefined;
    const figures = {
      read_signal_after_daemon_start: afterStart,
      read_signal_1_client: one,
      read_signal_1_c_client: oneC,
      read_signal_50_clients: fifty,
      read_signal_50_c_clients: fiftyC,
      client_life_cpu: lives,
      start_batch_back_to_back: burst,
      start_batch_paused: paused,
      connect_quit_stop_batch: cycles,
      batch_cpu_per_sample_1khz: cpu,
      one_shot_session_wall: oneShot,
    };
    console.log(
      JSON.stringify(
        {
          bench: 'geopm-side-by-side',
          geopm_ref: GEOPM_REF ?? null,
          ...(GEOPM_REF ? {} : { note: 'GEOPM_REF is not set: joulegate side only, no ratios' }),
          ratio_is: 'joulegate / GEOPM (below 1: joulegate takes less)',
          load_average_1min: { before: loadBefore, after: loadAverage() },
          ...figures,
          daemon_memory_after_use_mb: { ...pss, ...(pssRatio === undefined ? {} : { ratio_pss: pssRatio }) },
          ...(GEOPM_REF ? { done_when: doneWhen(figures, pssRatio) } : {}),
        },
        null,
        2,
      ),
    );
  } finally {
    for (const side of sides) {
      await side.batch.end();
      await side.stop();
    }
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench/geopm-side-by-side: ${err.message}\n`);
  process.exit(1);
});
