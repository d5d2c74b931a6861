/**
 * Scrape cost of `joulegate exporter` on a generated 256-CPU node (2 packages × 64 cores × 2
 * threads, RAPL package/dram/psys zones, cpufreq policies, /proc) with 8 fake NVML GPUs (the
 * tests' fake library, test/fakes/fake_nvml.c): scrape latency p50/p99 as Prometheus sees it (HTTP
 * round trip on 127.0.0.1, keep-alive) and the exporter's CPU time per scrape (utime+stime from
 * /proc/<pid>/stat over all scrapes). In the same run, when Debian's prometheus-node-exporter is
 * installed: node_exporter with only its rapl collector on the same tree (--path.sysfs), the
 * tool admins already scrape for RAPL. Needs `npm run build` (the exporter runs from dist/).
 * Prints JSON with the 1-minute load average.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateTree } from '../test/fixtures/generate.js';

const SCRAPES = Number(process.env.BENCH_SCRAPES ?? 300);
const WARMUP = 20;
const ROOT = new URL('../', import.meta.url).pathname;
const CLI = join(ROOT, 'dist/app/joulegate-loader.js');
const NODE_EXPORTER = '/usr/bin/prometheus-node-exporter';
const TICKS_PER_S = 100;

const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-exporter-'));
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of children) c.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
});

/** The 256-CPU tree; `raplOnly`: no cpufreq and no /proc, so only RAPL is exported (node_exporter's rapl set). */
function node256(name: string, raplOnly = false): string {
  const root = join(work, name);
  generateTree(root, {
    packages: 2,
    coresPerPackage: 64,
    threadsPerCore: 2,
    cpufreq: raplOnly ? 'none' : 'cpu',
  });
  if (raplOnly) rmSync(join(root, 'proc'), { recursive: true });
  cpSync(join(ROOT, 'test/fixtures/energy/intel-2s/sys/class/powercap'), join(root, 'sys/class/powercap'), {
    recursive: true,
  });
  return root;
}

function fakeNvml(gpus: number): Record<string, string> {
  const lib = join(work, 'libnvidia-ml.so.1');
  execFileSync('gcc', ['-shared', '-fPIC', '-O1', '-o', lib, join(ROOT, 'test/fakes/fake_nvml.c')]);
  const state = join(work, 'nvml-state');
  writeFileSync(state, `device_count=${gpus}\n`);
  writeFileSync(join(work, 'nvml-log'), '');
  return { JOULEGATE_NVML_LIB: lib, FAKE_NVML_STATE: state, FAKE_NVML_LOG: join(work, 'nvml-log') };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function waitServing(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url}: not serving`);
}

/** utime + stime of a process, ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
const round = (x: number) => Math.round(x * 1000) / 1000;

async function measure(name: string, url: string, child: ChildProcess) {
  await waitServing(url, child);
  for (let i = 0; i < WARMUP; i++) await (await fetch(url)).text();
  const cpu0 = cpuMs(child.pid!);
  const ms: number[] = [];
  let bytes = 0;
  let series = 0;
  const readMs: number[] = [];
  for (let i = 0; i < SCRAPES; i++) {
    const t0 = performance.now();
    const body = await (await fetch(url)).text();
    ms.push(performance.now() - t0);
    bytes = body.length;
    series = body.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    const read = /^joulegate_exporter_read_seconds\{[^}]*\} (\S+)$/m.exec(body);
    if (read) readMs.push(Number(read[1]) * 1000);
  }
  const cpu = cpuMs(child.pid!) - cpu0;
  ms.sort((a, b) => a - b);
  return {
    name,
    scrapes: SCRAPES,
    series,
    bytes,
    p50_ms: round(quantile(ms, 0.5)),
    p99_ms: round(quantile(ms, 0.99)),
    min_ms: round(ms[0]!),
    cpu_ms_per_scrape: round(cpu / SCRAPES),
    ...(readMs.length > 0
      ? {
          batch_read_p50_ms: round(
            quantile(
              readMs.sort((a, b) => a - b),
              0.5,
            ),
          ),
        }
      : {}),
    load1: round(loadavg()[0]!),
  };
}

const root = node256('full');
const raplRoot = node256('rapl', true);
const results: unknown[] = [];

async function joulegateRun(name: string, sysroot: string, args: string[], env: Record<string, string> = {}) {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [CLI, 'exporter', '--listen', `127.0.0.1:${port}`, '--node', 'bench', '--state-dir', 'none', ...args],
    {
      env: { ...process.env, JOULEGATE_SYSROOT: sysroot, ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  children.push(child);
  results.push(await measure(name, `http://127.0.0.1:${port}/metrics`, child));
  child.kill('SIGTERM');
}

await joulegateRun(
  'joulegate exporter: 256 CPUs, 8 GPUs, RAPL, cpufreq, /proc, consumers',
  root,
  [],
  fakeNvml(8),
);
await joulegateRun('joulegate exporter: RAPL only (node_exporter rapl set)', raplRoot, [
  '--consumers',
  'none',
]);

if (existsSync(NODE_EXPORTER)) {
  const nePort = await freePort();
  const ne = spawn(
    NODE_EXPORTER,
    [
      `--path.sysfs=${join(raplRoot, 'sys')}`,
      `--path.procfs=${join(raplRoot, 'proc')}`,
      '--collector.disable-defaults',
      '--collector.rapl',
      `--web.listen-address=127.0.0.1:${nePort}`,
    ],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );
  children.push(ne);
  results.push(
    await measure(
      'prometheus-node-exporter --collector.rapl (RAPL-only tree)',
      `http://127.0.0.1:${nePort}/metrics`,
      ne,
    ),
  );
  ne.kill('SIGTERM');
} else {
  results.push({ name: 'prometheus-node-exporter', skipped: `${NODE_EXPORTER} not installed` });
}

process.stdout.write(`${JSON.stringify({ bench: 'exporter', results }, null, 2)}\n`);
