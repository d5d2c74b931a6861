import { spawn } from 'node:child_process';

export const CLI = new URL('../../dist/app/joulegate-loader.js', import.meta.url).pathname;
export const DAEMON = new URL('../../dist/app/joulegated.js', import.meta.url).pathname;

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  input?: string;
  /** Prefix the command with these words (e.g. setpriv … to run as another user). */
  prefix?: string[];
  cwd?: string;
  timeoutMs?: number;
}

/** Runs a command to completion and collects its output. */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const full = [...(opts.prefix ?? []), cmd, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(full[0]!, full.slice(1), {
      env: { ...process.env, ...opts.env },
      cwd: opts.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    // A command that exits without reading its input closes the pipe first: EPIPE on our end
    // is that, not a failure (the exit status and output are what tests assert).
    child.stdin.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') reject(err);
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** Runs the built `joulegate` CLI (dist/app/joulegate-loader.js) with node. */
export function runCli(args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return run(process.execPath, [CLI, ...args], opts);
}
