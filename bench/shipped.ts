/**
 * What the benches that time joulegate's own processes share: those processes come from dist/
 * (what `npm run build` ships, as users run it), never from the TypeScript sources under tsx,
 * so a bench first makes sure dist/ is there and not older than src/; and the start of
 * joulegated on a private bus of its own.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { busConfig } from '../test/helpers/bus-config.js';

const REPO = new URL('..', import.meta.url).pathname;

/** The number after `name` on the command line (`--calls 2000`), or `fallback`. */
export function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

/** Absolute path of a built file, e.g. `distPath('app/joulegated.js')`. */
export function distPath(relative: string): string {
  return join(REPO, 'dist', relative);
}

/**
 * The Node flags of a built command's `#!/usr/bin/env -S node FLAGS` line: a bench starts it
 * with its own Node and these flags, as the command runs when started by its name.
 */
export function shebangFlags(path: string): string[] {
  const first = readFileSync(path, 'utf8').split('\n', 1)[0]!;
  const words = first.replace(/^#!\S*env\s+(-S\s+)?/, '').split(/\s+/);
  return words[0] === 'node' ? words.slice(1).filter((w) => w !== '') : [];
}

/** Why dist/ cannot stand for src/ (a missing or older output), or undefined when it can. */
function staleDist(): string | undefined {
  let newestSource = 0;
  for (const entry of readdirSync(join(REPO, 'src'), { recursive: true, encoding: 'utf8' })) {
    if (!entry.endsWith('.ts') || entry.endsWith('.d.ts')) continue;
    const source = statSync(join(REPO, 'src', entry)).mtimeMs;
    newestSource = Math.max(newestSource, source);
    const output = `${entry.slice(0, -'.ts'.length)}.js`;
    const built = statSync(distPath(output), { throwIfNoEntry: false });
    if (!built) return `dist/${output} is missing`;
    if (built.mtimeMs < source) return `src/${entry} is newer than dist/${output}`;
  }
  // The CLI bundle (what bin/joulegate runs) is made from all of src/.
  const bundle = statSync(distPath('app/joulegate.cjs'), { throwIfNoEntry: false });
  if (!bundle) return 'dist/app/joulegate.cjs is missing';
  if (bundle.mtimeMs < newestSource) return 'dist/app/joulegate.cjs is older than src/';
  return undefined;
}

/** Exits with one line when dist/ is missing or older than src/. */
export function requireBuiltDist(bench: string): void {
  const why = staleDist();
  if (why === undefined) return;
  process.stderr.write(`bench/${bench}: ${why}; run \`npm run build\` first\n`);
  process.exit(2);
}

/** Imports a built module; `M` is the type of its source, e.g. `typeof import('../src/x.js')`. */
export async function importDist<M>(relative: string): Promise<M> {
  return (await import(pathToFileURL(distPath(relative)).href)) as M;
}

/** Resolves with the first line of `stream` matching `pattern`; rejects if the process exits first. */
export function firstLine(proc: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    proc[stream]!.setEncoding('utf8');
    proc[stream]!.on('data', (d: string) => {
      text += d;
      const line = text.split('\n').find((l) => pattern.test(l));
      if (line) resolve(line);
    });
    proc.on('exit', (code) => reject(new Error(`${proc.spawnargs.join(' ')} exited (${code}): ${text}`)));
  });
}

/** p50 and p99 of latency samples in µs. */
export function percentiles(samples: number[], digits = 3): { p50_us: number; p99_us: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(digits));
  return { p50_us: at(0.5), p99_us: at(0.99) };
}

/**
 * The bus and the daemon each run in a session of their own (setsid), as system services do:
 * systemd starts every service as a session leader in a cgroup of its own. With the kernel's
 * autogroup scheduling (on by default) the CPU is shared between sessions first, so a bench that
 * kept them in its own session would have them compete with its hundred client processes for
 * one session's share, as no deployed daemon does. JOULEGATE_BENCH_SAME_SESSION=1 keeps them in
 * the bench's session (to compare).
 */
export const SERVICE_SESSIONS = process.env.JOULEGATE_BENCH_SAME_SESSION !== '1';

export interface RunningDaemon {
  /** The private bus's address, for clients. */
  address: string;
  daemon: ChildProcess;
  /** Milliseconds from spawning dist/app/joulegated.js to its "ready" line. */
  startToReadyMs: number;
  /** The startup time the daemon reports itself in that line. */
  reportedStartupMs: number;
  /** Stops the daemon, then the bus. */
  stop(): Promise<void>;
}

/** A running process, stopped with SIGTERM (SIGKILL after 5 s) once the returned promise resolves. */
async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((resolve) => p.once('exit', resolve));
  p.kill('SIGTERM');
  const killer = setTimeout(() => p.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(killer);
}

export interface PrivateBus {
  address: string;
  process: ChildProcess;
  /** Stops the bus after `first` (e.g. the daemons on it), in reverse order. */
  stop(...first: ChildProcess[]): Promise<void>;
}

/**
 * A system-like bus of its own (busConfig; its socket in `work`, which other users must be able
 * to enter for them to connect): any user may connect and call, only root owns names.
 */
export async function startBus(work: string): Promise<PrivateBus> {
  const config = join(work, 'bus.conf');
  writeFileSync(config, busConfig(`unix:path=${join(work, 'bus')}`));
  const bus = spawn(
    'dbus-daemon',
    ['--config-file', config, '--nofork', '--nopidfile', '--print-address=1'],
    { stdio: ['ignore', 'pipe', 'ignore'], detached: SERVICE_SESSIONS },
  );
  const stop = async (...first: ChildProcess[]) => {
    for (const p of [...first].reverse()) await stopProcess(p);
    await stopProcess(bus);
  };
  try {
    const address = (await firstLine(bus, 'stdout', /^unix:/)).trim();
    return { address, process: bus, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * A bus of its own (startBus) and dist/app/joulegated.js on it, with run and config directories
 * under `work` and no plugins. `env` adds to the environment (e.g. JOULEGATE_SYSROOT); `prefix`
 * runs the daemon through a command that execs it (e.g. into a mount namespace of its own).
 */
export async function startDaemon(
  work: string,
  env: Record<string, string> = {},
  prefix: string[] = [],
): Promise<RunningDaemon> {
  const bus = await startBus(work);
  const procs: ChildProcess[] = [];
  const stop = () => bus.stop(...procs);
  try {
    const { address } = bus;
    const spawnedAt = performance.now();
    const entry = distPath('app/joulegated.js');
    const argv = [...prefix, process.execPath, ...shebangFlags(entry), entry];
    const daemon = spawn(argv[0]!, argv.slice(1), {
      env: {
        ...process.env,
        DBUS_SYSTEM_BUS_ADDRESS: address,
        JOULEGATE_BUS_NAME: 'io.github.geopm',
        JOULEGATE_RUN_PATH: join(work, 'run'),
        JOULEGATE_CONFIG_PATH: join(work, 'config'),
        JOULEGATE_PLUGIN_PATH: '',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: SERVICE_SESSIONS,
    });
    procs.push(daemon);
    const ready = await Promise.race([
      firstLine(daemon, 'stderr', /joulegated: ready/),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('joulegated did not start in 60 s')), 60_000).unref(),
      ),
    ]);
    return {
      address,
      daemon,
      startToReadyMs: performance.now() - spawnedAt,
      reportedStartupMs: Number(/startup (\d+) ms/.exec(ready)?.[1]),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
