import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CLI, run } from './cli.js';
import { tempDir } from './tmp.js';

/** A running `joulegate exporter` child process. */
export interface RunningExporter {
  child: ChildProcess;
  port: number;
  /** http://…/metrics, or https://… when the exporter serves TLS (--web.config.file). */
  url: string;
  stderr: () => string;
  stop(): Promise<void>;
}

/**
 * Starts `joulegate exporter` on a sysroot (port 0: the kernel picks one; the exporter prints
 * it) and waits until it serves.
 */
export async function startExporter(
  root: string,
  node: string,
  /** `prefix`: words before the command (setpriv … env … to run as another user). */
  options: { port?: number; args?: string[]; env?: Record<string, string>; prefix?: string[] } = {},
): Promise<RunningExporter> {
  const command = [
    ...(options.prefix ?? []),
    process.execPath,
    CLI,
    'exporter',
    '--listen',
    `127.0.0.1:${options.port ?? 0}`,
    '--node',
    node,
    // Never the machine's /var/lib/joulegate: a state directory of the test's own, unless given.
    ...(options.args?.includes('--state-dir') ? [] : ['--state-dir', tempDir('jg-exporter-state-')]),
    ...(options.args ?? []),
  ];
  const child = spawn(command[0]!, command.slice(1), {
    env: { ...process.env, JOULEGATE_SYSROOT: root, ...options.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let scheme = 'http';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`exporter ${node} did not start: ${stderr}`)), 20_000);
    child.stderr!.on('data', (d) => {
      stderr += d;
      const m = /on (https?):\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        scheme = m[1]!;
        resolve(Number(m[2]));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exporter ${node} exited with ${code}: ${stderr}`));
    });
  });
  return {
    child,
    port,
    url: `${scheme}://127.0.0.1:${port}/metrics`,
    stderr: () => stderr,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** One scrape: the body and its content type. */
export async function scrape(url: string, accept?: string): Promise<{ body: string; type: string }> {
  const res = await fetch(url, { headers: accept ? { Accept: accept } : {} });
  return { body: await res.text(), type: res.headers.get('content-type') ?? '' };
}

/** What curl got: its exit status, the HTTP status (0: no response), headers and body. */
export interface CurlResult {
  exit: number | null;
  status: number;
  headers: string;
  body: string;
  stderr: string;
}

/**
 * One request with curl (Node 20's fetch cannot be given a CA without undici): `cacert` for
 * https, `user` as "name:password", `args` for anything else curl takes.
 */
export async function curl(
  url: string,
  options: { cacert?: string; user?: string; args?: readonly string[] } = {},
): Promise<CurlResult> {
  const dir = tempDir('jg-curl-');
  const headersFile = join(dir, 'headers');
  const args = [
    '--silent',
    '--show-error',
    '--max-time',
    '20',
    '--dump-header',
    headersFile,
    '--write-out',
    '\n%{http_code}',
    ...(options.cacert ? ['--cacert', options.cacert] : []),
    ...(options.user ? ['--user', options.user] : []),
    ...(options.args ?? []),
    url,
  ];
  const r = await run('curl', args);
  const cut = r.stdout.lastIndexOf('\n');
  let headers = '';
  try {
    headers = readFileSync(headersFile, 'utf8');
  } catch {
    // no response: no headers
  }
  return {
    exit: r.code,
    status: Number(r.stdout.slice(cut + 1)) || 0,
    headers,
    body: r.stdout.slice(0, Math.max(cut, 0)),
    stderr: r.stderr,
  };
}

/** The value of one series in Prometheus text (labels as written, e.g. `node="a",package="0"`). */
export function seriesValue(body: string, metric: string, labels: string): number | undefined {
  for (const line of body.split('\n')) {
    if (line.startsWith(`${metric}{${labels}} `)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

/** A free TCP port on 127.0.0.1 (closed again; the caller binds it next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * Writes a RAPL zone's energy_uj in place: fixed-width digits at offset 0 of the open file, so a
 * concurrent reader never sees a short or empty file.
 */
export class RaplCounterFile {
  private readonly fd: number;
  readonly width: number;
  readonly modulus: bigint;

  constructor(root: string, zone: string) {
    const dir = join(root, 'sys/class/powercap', zone);
    this.modulus = BigInt(readFileSync(join(dir, 'max_energy_range_uj'), 'utf8').trim()) + 1n;
    this.width = String(this.modulus).length;
    const file = join(dir, 'energy_uj');
    writeFileSync(file, `${readFileSync(file, 'utf8').trim().padStart(this.width, '0')}\n`);
    this.fd = openSync(file, 'r+');
  }

  /** Writes `uj` modulo the counter's range (a wrap, as the hardware does). */
  set(uj: bigint): void {
    writeSync(this.fd, `${String(uj % this.modulus).padStart(this.width, '0')}\n`, 0);
  }

  close(): void {
    closeSync(this.fd);
  }
}
