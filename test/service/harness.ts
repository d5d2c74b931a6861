import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after } from 'node:test';
import { DAEMON, type RunResult, run } from '../helpers/cli.js';
import { type PrivateBus, startPrivateBus } from '../helpers/dbus.js';
import { FIXTURES, tempDir } from '../helpers/tmp.js';
import { asUser, type TestUser } from '../helpers/users.js';

export const CLIENT_SCRIPT = new URL('./client-script.mjs', import.meta.url).pathname;
export const BUS_NAME = 'io.github.geopm';
/**
 * The daemon setting for error replies where GEOPM answers NaN, pid -1 or a list (the default):
 * tests of sessions and access lists see which check refused a call.
 */
export const STRICT_ANSWERS = { JOULEGATE_STRICT_ERRORS: '1' } as const;

/** A 4-CPU node: 2 packages × 2 cores, one NUMA node per package. */
function makeSysroot(root: string): void {
  const cpu = join(root, 'sys/devices/system/cpu');
  mkdirSync(cpu, { recursive: true });
  writeFileSync(join(cpu, 'online'), '0-3\n');
  for (let c = 0; c < 4; c++) {
    const topo = join(cpu, `cpu${c}`, 'topology');
    mkdirSync(topo, { recursive: true });
    writeFileSync(join(topo, 'physical_package_id'), `${c < 2 ? 0 : 1}\n`);
    writeFileSync(join(topo, 'core_id'), `${c % 2}\n`);
  }
  for (const [n, list] of [
    [0, '0-1'],
    [1, '2-3'],
  ] as const) {
    const node = join(root, 'sys/devices/system/node', `node${n}`);
    mkdirSync(node, { recursive: true });
    writeFileSync(join(node, 'cpulist'), `${list}\n`);
    writeFileSync(join(node, 'distance'), n === 0 ? '10 21\n' : '21 10\n');
  }
}

export const INITIAL_CONTROLS: Record<string, string> = {
  'FILECTL-LIMIT-0': '100',
  'FILECTL-LIMIT-1': '100',
  'FILECTL-MODE-0': '1',
};

export interface StepResult {
  ok: boolean;
  value?: unknown;
  name?: string;
  message?: string;
  /** How long the call took, as the client timed it. */
  ms?: number;
}

export interface ClientOptions {
  user?: TestUser;
  /** Run the client as leader of a new Unix session (setsid). */
  setsid?: boolean;
  /**
   * Run the client under a shell that leads a new Unix session (the spawned pid is the
   * leader, the client its child).
   */
  leaderShell?: boolean;
}

/** A running client that holds its connection until released (for kill/leader tests). */
export interface HeldClient {
  process: ChildProcess;
  results: StepResult[];
  release(): Promise<void>;
}

/**
 * Everything a service test needs: a private bus, fixture sysroot, temp config/run/control
 * dirs, the test plugin, and the daemon as a real process (node dist/app/joulegated.js).
 */
export class ServiceHarness {
  /**
   * `daemonEnv` is added to the environment of every daemon this harness starts, e.g.
   * STRICT_ANSWERS for tests that tell the causes of refused calls apart by their error replies.
   */
  constructor(private readonly daemonEnv: Record<string, string> = {}) {}

  bus!: PrivateBus;
  readonly sysroot = tempDir('jg-svc-sysroot-');
  readonly configDir = join(tempDir('jg-svc-config-'), 'geopm');
  readonly runDir = join(tempDir('jg-svc-run-'), 'geopm');
  readonly controlDir = tempDir('jg-svc-controls-');
  readonly pluginDir = tempDir('jg-svc-plugins-');
  daemon?: ChildProcess;
  daemonLog = '';
  private readonly held: ChildProcess[] = [];

  async setup(): Promise<void> {
    makeSysroot(this.sysroot);
    for (const [file, value] of Object.entries(INITIAL_CONTROLS))
      writeFileSync(join(this.controlDir, file), `${value}\n`);
    // Test users' processes must not see the control files; the daemon (root) does.
    copyFileSync(
      join(FIXTURES, 'service/file-controls-plugin.mjs'),
      join(this.pluginDir, 'file-controls-plugin.mjs'),
    );
    chmodSync(join(this.pluginDir, 'file-controls-plugin.mjs'), 0o644);
    this.bus = await startPrivateBus();
    // A failed assertion skips a test's release(): kill leftover clients so the file can end.
    after(() => {
      // Held clients run under `setsid --wait`, which forks: killing setsid alone would leave
      // the client holding our pipes. Closing its stdin releases it; then drop our pipe ends.
      for (const p of this.held) {
        p.stdin?.end();
        p.stdout?.destroy();
        p.stderr?.destroy();
        p.kill('SIGKILL');
        p.unref();
      }
      this.daemon?.kill('SIGKILL');
    });
  }

  env(): Record<string, string> {
    return {
      DBUS_SYSTEM_BUS_ADDRESS: this.bus.address,
      JOULEGATE_BUS_NAME: BUS_NAME,
      JOULEGATE_RUN_PATH: this.runDir,
      JOULEGATE_CONFIG_PATH: this.configDir,
      JOULEGATE_SYSROOT: this.sysroot,
      JOULEGATE_PLUGIN_PATH: this.pluginDir,
      JOULEGATE_TEST_CONTROL_DIR: this.controlDir,
    };
  }

  control(file: string): string {
    return readFileSync(join(this.controlDir, file), 'utf8').trim();
  }

  setControlFile(file: string, value: string): void {
    writeFileSync(join(this.controlDir, file), `${value}\n`);
  }

  /**
   * Starts the daemon (with `env` added to its environment) and resolves once it logs "ready".
   * `wrapper` runs first and must end by exec'ing its arguments (the daemon's command), so that
   * the daemon keeps the pid this harness signals.
   */
  async startDaemon(
    env: Record<string, string> = {},
    wrapper: readonly string[] = [],
  ): Promise<ChildProcess> {
    const [command, ...args] = [...wrapper, process.execPath, DAEMON];
    const proc = spawn(command!, args, {
      // A server's wait for its client is a wall-clock limit: on a loaded machine a test client
      // may take longer than the daemon's 10 s to connect. Tests of that limit set their own.
      env: { ...process.env, JOULEGATE_BATCH_IDLE_TIMEOUT: '300', ...this.env(), ...this.daemonEnv, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.daemon = proc;
    let own = '';
    await new Promise<void>((resolve, reject) => {
      proc.stderr!.setEncoding('utf8');
      proc.stderr!.on('data', (d: string) => {
        this.daemonLog += d;
        own += d;
        if (own.includes('joulegated: ready')) resolve();
      });
      proc.on('exit', (code) => reject(new Error(`joulegated exited with ${code}:\n${own}`)));
    });
    return proc;
  }

  async stopDaemon(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const proc = this.daemon;
    if (!proc || proc.exitCode !== null) return proc?.exitCode ?? null;
    const done = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
    proc.kill(signal);
    return done;
  }

  private clientCommand(steps: unknown[] | string, opts: ClientOptions): { cmd: string; args: string[] } {
    const envArgs = Object.entries({ ...this.env(), PATH: '/usr/bin:/bin' }).map(([k, v]) => `${k}=${v}`);
    const words = [
      ...(opts.user ? asUser(opts.user) : []),
      ...(opts.setsid || opts.leaderShell ? ['setsid', '--wait'] : []),
      ...(opts.leaderShell ? ['sh', '-c', '"$@"; exit $?', 'sh'] : []),
      'env',
      ...envArgs,
      process.execPath,
      CLIENT_SCRIPT,
      typeof steps === 'string' ? steps : JSON.stringify(steps),
    ];
    return { cmd: words[0]!, args: words.slice(1) };
  }

  /**
   * Runs a client process through `steps` (see client-script.mjs; a string is passed as is,
   * e.g. "@<file>") and returns each result.
   */
  async client(steps: unknown[] | string, opts: ClientOptions = {}): Promise<StepResult[]> {
    const { cmd, args } = this.clientCommand(steps, opts);
    const r: RunResult = await run(cmd, args, { timeoutMs: 120_000 });
    if (r.code !== 0) throw new Error(`client failed (${r.code}): ${r.stderr}`);
    return r.stdout
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as StepResult);
  }

  /**
   * Starts a client process through `steps` and returns it at once (stdout and stderr piped),
   * for tests that act on it while it runs; killed at the end of the file if still running.
   */
  startClient(steps: unknown[], opts: ClientOptions = {}): ChildProcess {
    const { cmd, args } = this.clientCommand(steps, opts);
    const proc = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.held.push(proc);
    return proc;
  }

  /** Starts a client that runs `steps`, then waits (connection open) until released or killed. */
  async heldClient(steps: unknown[], opts: ClientOptions = {}): Promise<HeldClient> {
    const proc = this.startClient([...steps, { hold: true }], opts);
    // Releasing a client that already died (a kill test) closes a broken pipe: not an error.
    proc.stdin!.on('error', () => {});
    const results: StepResult[] = [];
    let out = '';
    let err = '';
    proc.stderr!.on('data', (d) => {
      err += d;
    });
    await new Promise<void>((resolve, reject) => {
      proc.stdout!.setEncoding('utf8');
      proc.stdout!.on('data', (d: string) => {
        out += d;
        if (out.includes('HOLDING')) resolve();
      });
      proc.on('exit', (code) => reject(new Error(`held client exited early (${code}): ${out}${err}`)));
    });
    for (const line of out.split('\n'))
      if (line.startsWith('{')) results.push(JSON.parse(line) as StepResult);
    const exited = new Promise<void>((r) => proc.on('exit', () => r()));
    return {
      process: proc,
      results,
      release: async () => {
        proc.stdin!.end();
        await exited;
      },
    };
  }
}

/**
 * A harness whose daemon (started with `env` added) serves batch clients of other users: they
 * reach its sysroot and run dir, and every user may read TIME.
 */
export async function batchDaemon(env: Record<string, string>): Promise<ServiceHarness> {
  const h = new ServiceHarness();
  await h.setup();
  chmodSync(h.sysroot, 0o755);
  chmodSync(dirname(h.runDir), 0o711);
  await h.startDaemon(env);
  await h.client([{ call: 'platformSetGroupAccess', args: ['', ['TIME'], []] }]);
  return h;
}

/**
 * Polls `check` every `everyMs` until it returns true or `ms` pass; returns the last outcome.
 * A check that throws (a file not written yet) counts as false until the last try, whose error
 * is thrown.
 */
export async function waitFor(check: () => boolean, ms = 10_000, everyMs = 50): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      if (check()) return true;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return check();
}
