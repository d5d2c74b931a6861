// Overhead of `joulegate monitor`: wall-time ratio of a fixed CPU-bound workload under the
// monitor (10 Hz and 1 Hz) to the bare workload, the fixed cost (`monitor -- true` minus bare
// `true`) and the monitor's peak RSS. Runs are interleaved so machine load hits all variants
// alike; medians of RUNS runs. Prints one JSON object.
//
// On a shared, overloaded machine wall time swings several-fold between runs, so the CPU time
// (user + sys of the monitor and the app together, from GNU time) is reported as well: the
// CPU-time ratio is the cost the monitor itself adds, nearly independent of machine load.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

// The installed command, as users run it (bin/joulegate starts dist/cli/main.js).
const JOULEGATE = new URL('../bin/joulegate', import.meta.url).pathname;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
// A fixed amount of integer work (no I/O, no allocation): 5e7 iterations take about 0.5–1.5 s on
// the project VMs. The wall ratio includes the monitor's fixed start cost, so it only approaches
// 1 for long workloads: BENCH_WORKLOAD_ITERATIONS=1e9 (about 30 s) measures that regime.
const ITERATIONS = Number(process.env.BENCH_WORKLOAD_ITERATIONS ?? 5e7);
if (!Number.isFinite(ITERATIONS) || ITERATIONS <= 0) {
  console.error(`bench/monitor: BENCH_WORKLOAD_ITERATIONS must be a positive number`);
  process.exit(2);
}
const WORKLOAD = [
  process.execPath,
  '-e',
  `let x=0;for(let i=0;i<${ITERATIONS};i++){x=(x+i*i)%1000003}if(x<0)console.log(x)`,
];
const out = mkdtempSync(join(tmpdir(), 'joulegate-bench-'));

interface Timing {
  wall: number;
  cpu: number;
  maxRssKb: number;
}

/** Wall time (measured here), CPU time and peak RSS (GNU time) of one run. */
function timed(argv: string[]): Timing {
  // GNU time reports the peak RSS of the largest process it waited for: for `monitor -- true`
  // and `monitor -- sleep` that is the monitor itself.
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', 'BENCH %U %S %M', ...argv], { encoding: 'utf8', cwd: out });
  const wall = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed: ${r.stderr}`);
  const [, user, sys, rss] = r.stderr.trim().split('\n').pop()!.split(' ');
  return { wall, cpu: Number(user) + Number(sys), maxRssKb: Number(rss) };
}

const monitor = (period: string, cmd: string[]) => [
  JOULEGATE,
  'monitor',
  '--sampling-period',
  period,
  '--data-out',
  out,
  '--',
  ...cmd,
];
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const runs: Record<'bare' | 'hz10' | 'hz1' | 'trueBare' | 'trueMon' | 'sleepMon', Timing[]> = {
  bare: [],
  hz10: [],
  hz1: [],
  trueBare: [],
  trueMon: [],
  sleepMon: [],
};
try {
  for (let i = 0; i < RUNS; i++) {
    runs.bare.push(timed(WORKLOAD));
    runs.hz10.push(timed(monitor('0.1', WORKLOAD)));
    runs.hz1.push(timed(monitor('1', WORKLOAD)));
    runs.trueBare.push(timed(['true']));
    runs.trueMon.push(timed(monitor('1', ['true'])));
    runs.sleepMon.push(timed(monitor('0.1', ['sleep', '0.5'])));
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
const med = (k: keyof typeof runs, f: keyof Timing) => median(runs[k].map((t) => t[f]));
const fixedCpu = med('trueMon', 'cpu') - med('trueBare', 'cpu');
const rss = [...runs.trueMon, ...runs.sleepMon].map((t) => t.maxRssKb / 1024);
console.log(
  JSON.stringify(
    {
      runs: RUNS,
      workload_iterations: ITERATIONS,
      workload_bare_wall_s: med('bare', 'wall'),
      ratio_10hz: med('hz10', 'wall') / med('bare', 'wall'),
      ratio_1hz: med('hz1', 'wall') / med('bare', 'wall'),
      cpu_ratio_10hz: med('hz10', 'cpu') / med('bare', 'cpu'),
      cpu_ratio_1hz: med('hz1', 'cpu') / med('bare', 'cpu'),
      // The sampling itself, without the fixed start cost: extra CPU seconds per workload second.
      sampling_cpu_overhead_10hz: (med('hz10', 'cpu') - med('bare', 'cpu') - fixedCpu) / med('bare', 'cpu'),
      sampling_cpu_overhead_1hz: (med('hz1', 'cpu') - med('bare', 'cpu') - fixedCpu) / med('bare', 'cpu'),
      target_ratio: 1.01,
      fixed_cost_s: med('trueMon', 'wall') - med('trueBare', 'wall'),
      fixed_cost_cpu_s: fixedCpu,
      target_fixed_cost_s: 0.3,
      perun_fixed_cost_s: 3.8,
      peak_rss_mb: Math.max(...rss),
      median_rss_mb: median(rss),
      target_rss_mb: 60,
      load_average_1m: loadavg()[0],
      wall_s: Object.fromEntries(
        Object.entries(runs).map(([k, ts]) => [k, ts.map((t) => Number(t.wall.toFixed(3)))]),
      ),
    },
    null,
    1,
  ),
);
