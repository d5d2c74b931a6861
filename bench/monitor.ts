// Overhead of `joulegate monitor` (the installed command, dist/): wall-time ratio of a fixed
// CPU-bound workload under the monitor (10 Hz and 1 Hz) to its floor, the same workload run
// bare; the fixed cost (`monitor -- true` against its floor, bare `true`) and the monitor's
// peak RSS. Prints one JSON object with only what this run measured.
//
// The project VMs change speed by several percent from one minute to the next (other guests on
// the host), more than the 1 % this bench must resolve. So each monitored run is compared with
// the mean of the bare runs just before and after it (which cancels a steady drift), the order of
// the two rates alternates, and the ratio is the median of those per-run ratios. The ratio of
// the medians and the spread of the bare runs are printed too, to show how noisy the machine was.
//
// Env: BENCH_RUNS (default 5) monitored runs per rate; BENCH_WORKLOAD_ITERATIONS (default 1e9,
// about 30 s bare on the project VMs: the ratio includes the monitor's fixed start cost, so it
// only approaches 1 for workloads much longer than that cost).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBuiltDist } from './shipped.js';

requireBuiltDist('monitor');
// The installed command, as users run it (bin/joulegate starts dist/app/joulegate-loader.js).
const JOULEGATE = new URL('../bin/joulegate', import.meta.url).pathname;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ITERATIONS = Number(process.env.BENCH_WORKLOAD_ITERATIONS ?? 1e9);
for (const [name, v] of [
  ['BENCH_RUNS', RUNS],
  ['BENCH_WORKLOAD_ITERATIONS', ITERATIONS],
] as const) {
  if (!Number.isInteger(v) || v <= 0) {
    console.error(`bench/monitor: ${name} must be a positive integer`);
    process.exit(2);
  }
}
/** The fixed-cost runs take a fraction of a second each: more of them, for a stabler median. */
const FIXED_RUNS = Math.max(RUNS, 11);
// A fixed amount of integer work: no I/O, no allocation.
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
const round = (x: number, digits = 4) => Number(x.toFixed(digits));

const bare: Timing[] = [];
const hz10: Timing[] = [];
const hz1: Timing[] = [];
const trueBare: Timing[] = [];
const trueMon: Timing[] = [];
const sleepMon: Timing[] = [];
try {
  // bare, (10 Hz, 1 Hz | 1 Hz, 10 Hz), bare, …, bare: every monitored run has a bare run on
  // each side.
  bare.push(timed(WORKLOAD));
  for (let k = 0; k < RUNS; k++) {
    if (k % 2 === 0) {
      hz10.push(timed(monitor('0.1', WORKLOAD)));
      hz1.push(timed(monitor('1', WORKLOAD)));
    } else {
      hz1.push(timed(monitor('1', WORKLOAD)));
      hz10.push(timed(monitor('0.1', WORKLOAD)));
    }
    bare.push(timed(WORKLOAD));
  }
  for (let k = 0; k < FIXED_RUNS; k++) {
    trueBare.push(timed(['true']));
    trueMon.push(timed(monitor('1', ['true'])));
    sleepMon.push(timed(monitor('0.1', ['sleep', '0.5'])));
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}

/** Each monitored run against the mean of the bare runs around it. */
const bracketed = (runs: Timing[], f: keyof Timing) =>
  runs.map((t, k) => t[f] / ((bare[k]![f] + bare[k + 1]![f]) / 2));
const med = (runs: Timing[], f: keyof Timing) => median(runs.map((t) => t[f]));
const fixedCpu = med(trueMon, 'cpu') - med(trueBare, 'cpu');
const bareWalls = bare.map((t) => t.wall);
const rss = [...trueMon, ...sleepMon].map((t) => t.maxRssKb / 1024);
console.log(
  JSON.stringify(
    {
      runs: RUNS,
      workload_iterations: ITERATIONS,
      floor: { name: 'the workload run bare (no monitor), median wall', wall_s: round(median(bareWalls), 3) },
      joulegate_10hz: {
        name: 'monitor --sampling-period 0.1 -- workload',
        wall_s: round(med(hz10, 'wall'), 3),
      },
      joulegate_1hz: { name: 'monitor --sampling-period 1 -- workload', wall_s: round(med(hz1, 'wall'), 3) },
      ratio_10hz: round(median(bracketed(hz10, 'wall'))),
      ratio_1hz: round(median(bracketed(hz1, 'wall'))),
      target_ratio: 1.01,
      // What the fixed cost alone adds to this workload: the floor of the two ratios above.
      fixed_cost_share: round((med(trueMon, 'wall') - med(trueBare, 'wall')) / median(bareWalls)),
      ratio_of_medians_10hz: round(med(hz10, 'wall') / median(bareWalls)),
      ratio_of_medians_1hz: round(med(hz1, 'wall') / median(bareWalls)),
      // How much the machine itself varied: (slowest - fastest) / median of the bare runs.
      bare_wall_spread: round((Math.max(...bareWalls) - Math.min(...bareWalls)) / median(bareWalls)),
      cpu_ratio_10hz: round(median(bracketed(hz10, 'cpu'))),
      cpu_ratio_1hz: round(median(bracketed(hz1, 'cpu'))),
      // The sampling itself, without the fixed start cost: extra CPU seconds per workload second
      // (spent on the monitor's own core, so it adds to wall time only when cores are short).
      sampling_cpu_overhead_10hz: round((med(hz10, 'cpu') - med(bare, 'cpu') - fixedCpu) / med(bare, 'cpu')),
      sampling_cpu_overhead_1hz: round((med(hz1, 'cpu') - med(bare, 'cpu') - fixedCpu) / med(bare, 'cpu')),
      fixed_runs: FIXED_RUNS,
      fixed_cost_floor: { name: 'bare `true`, median wall', wall_s: round(med(trueBare, 'wall'), 3) },
      fixed_cost_joulegate: { name: 'monitor -- true, median wall', wall_s: round(med(trueMon, 'wall'), 3) },
      fixed_cost_s: round(med(trueMon, 'wall') - med(trueBare, 'wall'), 3),
      fixed_cost_cpu_s: round(fixedCpu, 3),
      target_fixed_cost_s: 0.3,
      peak_rss_mb: round(Math.max(...rss), 1),
      median_rss_mb: round(median(rss), 1),
      target_rss_mb: 60,
      load_average_1m: loadavg()[0],
      wall_s: Object.fromEntries(
        Object.entries({ bare, hz10, hz1, trueBare, trueMon, sleepMon }).map(([k, ts]) => [
          k,
          ts.map((t) => round(t.wall, 3)),
        ]),
      ),
    },
    null,
    1,
  ),
);
