/**
 * Cost of one PlatformIO.readBatch() of every signal of TIME, PROCFS, CPUFREQ and CPUINFO at
 * every native index, on generated 64/128/256-CPU trees. Baseline, measured in the same run:
 * reading the same files once each with readFileSync (what any sampler must at least do).
 * Second baseline, the floor for any reader: one pread per file on descriptors opened beforehand,
 * no parsing. Prints JSON; target ≤ 2 ms per batch at 256 CPUs and roughly linear growth.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CPUFREQ_ATTRIBUTES } from '../src/backends/cpufreq/attributes.js';
import { loadPlatform } from '../src/backends/load.js';
import type { PlatformIO } from '../src/platform/platform-io.js';
import { Behavior } from '../src/platform/signal-info.js';
import { Sysroot } from '../src/platform/sysroot.js';
import { generateTree } from '../test/fixtures/generate.js';

const BACKENDS = new Set(['TIME', 'PROCFS', 'CPUFREQ', 'CPUINFO']);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 400);
const WARMUP = 20;

interface Stats {
  /** The least-disturbed run: on a shared machine the best estimate of the cost itself. */
  min: number;
  mean: number;
  p50: number;
  p99: number;
}

function stats(ms: number[]): Stats {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    min: round(s[0]!),
    mean: round(s.reduce((a, b) => a + b, 0) / s.length),
    p50: round(at(0.5)),
    p99: round(at(0.99)),
  };
}

async function time(fn: () => unknown | Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

/** Pushes every low-level signal of the benchmarked backends at every native index. */
function pushAll(pio: PlatformIO): number {
  let pushed = 0;
  for (const b of pio.loadedBackends()) {
    for (const name of b.signalNames().filter((n) => n.includes('::'))) {
      const info = b.signalInfo(name);
      for (let idx = 0; idx < pio.topology.numDomain(info.domain); idx++) {
        pio.pushSignal(name, info.domain, idx);
        pushed++;
      }
    }
  }
  return pushed;
}

/** The files one batch must read: the /proc files and the non-constant cpufreq attributes. */
function filesOfBatch(root: string, cpus: number): string[] {
  const polled = CPUFREQ_ATTRIBUTES.filter((a) => a.behavior !== Behavior.Constant).map((a) => a.attribute);
  const files = ['proc/stat', 'proc/meminfo', 'proc/diskstats', 'proc/net/dev'].map((f) => join(root, f));
  for (let cpu = 0; cpu < cpus; cpu++) {
    for (const attr of polled) files.push(join(root, `sys/devices/system/cpu/cpufreq/policy${cpu}/${attr}`));
  }
  return files;
}

const results: Record<string, unknown> = {
  floor: 'pread_floor_ms: one pread per file of the batch on descriptors opened beforehand, no parsing',
  joulegate: 'batch_ms: PlatformIO.readBatch() of every pushed signal',
};
const means: Record<number, number> = {};
const medians: Record<number, number> = {};
const minima: Record<number, number> = {};
for (const cpus of [64, 128, 256]) {
  const root = mkdtempSync(join(tmpdir(), `joulegate-bench-${cpus}-`));
  try {
    generateTree(root, { packages: 2, coresPerPackage: cpus / 4, threadsPerCore: 2, cpufreq: 'cpu' });
    const pio = await loadPlatform({ sysroot: new Sysroot(root), include: (n) => BACKENDS.has(n) });
    const pushed = pushAll(pio);
    const batch = stats(await time(() => pio.readBatch()));
    const files = filesOfBatch(root, cpus);
    const baseline = stats(await time(() => files.map((f) => readFileSync(f, 'latin1'))));
    const fds = files.map((f) => openSync(f, 'r'));
    const buf = Buffer.allocUnsafe(1 << 16);
    const floor = stats(await time(() => fds.map((fd) => readSync(fd, buf, 0, buf.length, 0))));
    for (const fd of fds) closeSync(fd);
    await pio.close();
    means[cpus] = batch.mean;
    medians[cpus] = batch.p50;
    minima[cpus] = batch.min;
    results[`cpus_${cpus}`] = {
      backends: pio.loadedBackends().map((b) => b.name),
      signals_pushed: pushed,
      files_per_batch: files.length,
      batch_ms: batch,
      baseline_readFileSync_ms: baseline,
      pread_floor_ms: floor,
      ratio_batch_to_baseline: Math.round((batch.mean / baseline.mean) * 100) / 100,
      ratio_batch_to_pread_floor: Math.round((batch.mean / floor.mean) * 100) / 100,
      // Medians resist the scheduling stalls of a shared machine better than means.
      ratio_batch_to_pread_floor_p50: Math.round((batch.p50 / floor.p50) * 100) / 100,
      ratio_batch_to_pread_floor_min: Math.round((batch.min / floor.min) * 100) / 100,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
results.ratio_256_to_64 = Math.round((means[256]! / means[64]!) * 100) / 100;
results.ratio_256_to_64_p50 = Math.round((medians[256]! / medians[64]!) * 100) / 100;
results.ratio_256_to_64_min = Math.round((minima[256]! / minima[64]!) * 100) / 100;
results.target_ms_at_256 = 2;
results.meets_target_mean = means[256]! <= 2;
results.meets_target_p50 = medians[256]! <= 2;
results.meets_target_min = minima[256]! <= 2;
results.iterations = ITERATIONS;
console.log(JSON.stringify(results, null, 2));
