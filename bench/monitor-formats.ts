// Peak memory of `joulegate monitor` (the installed command, dist/) by output format (issue 15,
// point 7: ≤ 60 MB for the whole tree minus the app, with every format). Each run monitors
// `sleep SECONDS` at a 50 ms period and writes one format (or all of them) to a temp dir; then
// one long run at the highest rate (10 ms period) writes every format: the most samples held.
// Two figures per run:
//   - tree: the sum of the RSS of every process in the monitor's tree except the app (`sleep`)
//     and GNU time itself, polled every 5 ms from /proc — what "the whole tree" means;
//   - largest process: GNU time's %M (the kernel's exact peak of the largest single process,
//     which a 5 ms poll can miss).
// The floor is a bare idle `node` measured in the same run. Prints one JSON object.
//
// Env: BENCH_FORMAT_RUNS (default 3) runs per format; BENCH_APP_SECONDS (default 2);
// BENCH_LONG_SECONDS (default 60; 0 skips the long run).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { bareNodeMemory } from './memory.js';
import { requireBuiltDist } from './shipped.js';

requireBuiltDist('monitor-formats');
const JOULEGATE = new URL('../bin/joulegate', import.meta.url).pathname;
const RUNS = Number(process.env.BENCH_FORMAT_RUNS ?? 3);
const APP_SECONDS = Number(process.env.BENCH_APP_SECONDS ?? 2);
const LONG_SECONDS = Number(process.env.BENCH_LONG_SECONDS ?? 60);
if (!Number.isInteger(RUNS) || RUNS <= 0 || !(APP_SECONDS > 0) || !(LONG_SECONDS >= 0)) {
  console.error(
    'bench/monitor-formats: BENCH_FORMAT_RUNS must be a positive integer, BENCH_APP_SECONDS > 0, BENCH_LONG_SECONDS >= 0',
  );
  process.exit(2);
}
const FORMATS = ['text', 'json', 'csv', 'bench', 'hdf5', 'html', 'text,json,csv,bench,hdf5,html'];
const TARGET_MB = 60;
const round = (x: number, digits = 1) => Number(x.toFixed(digits));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** pid → [parent pid, command name, RSS kB] for every process now. */
function processTable(): Map<number, [number, string, number]> {
  const table = new Map<number, [number, string, number]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // comm is in parentheses and may hold spaces; the fields after it are space-separated.
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      const rssPages = Number(fields[21]);
      table.set(Number(entry), [Number(fields[1]), comm, (rssPages * 4096) / 1024]);
    } catch {
      // the process ended between readdir and read
    }
  }
  return table;
}

/** RSS (kB) of `root`'s descendants, `root` itself and processes named `exclude` left out. */
function treeRssKb(root: number, exclude: string): number {
  const table = processTable();
  let total = 0;
  for (const [pid, [, comm, rss]] of table) {
    if (pid === root || comm === exclude) continue;
    for (let p = table.get(pid)?.[0]; p !== undefined && p > 1; p = table.get(p)?.[0]) {
      if (p === root) {
        total += rss;
        break;
      }
    }
  }
  return total;
}

interface Run {
  tree_peak_mb: number;
  largest_process_peak_mb: number;
  files: number;
}

async function monitorOnce(format: string, period = '0.05', seconds = APP_SECONDS): Promise<Run> {
  const out = mkdtempSync(join(tmpdir(), 'joulegate-bench-formats-'));
  try {
    const args = ['-f', 'BENCH %M', JOULEGATE, 'monitor', '--sampling-period', period, '-f', format];
    const child = spawn('/usr/bin/time', [...args, '--data-out', out, '--', 'sleep', String(seconds)], {
      cwd: out,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    let peakKb = 0;
    let running = true;
    void exited.then(() => {
      running = false;
    });
    while (running) {
      peakKb = Math.max(peakKb, treeRssKb(child.pid!, 'sleep'));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const code = await exited;
    if (code !== 0) throw new Error(`monitor -f ${format} failed: ${stderr.trim()}`);
    const largestKb = Number(/BENCH (\d+)/.exec(stderr)?.[1]);
    return {
      tree_peak_mb: round(peakKb / 1024),
      largest_process_peak_mb: round(largestKb / 1024),
      files: readdirSync(out).length,
    };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

const bare = await bareNodeMemory();
const results = [];
for (const format of FORMATS) {
  const runs: Run[] = [];
  for (let k = 0; k < RUNS; k++) runs.push(await monitorOnce(format));
  // The worst run counts: a peak target is about the largest footprint.
  const peak = Math.max(...runs.map((r) => Math.max(r.tree_peak_mb, r.largest_process_peak_mb)));
  results.push({
    format,
    peak_mb: peak,
    median_tree_peak_mb: median(runs.map((r) => r.tree_peak_mb)),
    median_largest_process_peak_mb: median(runs.map((r) => r.largest_process_peak_mb)),
    above_floor_mb: round(peak - bare.rss_mb),
    target_met: peak <= TARGET_MB,
    runs,
  });
}
const EVERY = FORMATS.at(-1)!;
const long =
  LONG_SECONDS > 0
    ? await monitorOnce(EVERY, '0.01', LONG_SECONDS).then((run) => {
        const peak = Math.max(run.tree_peak_mb, run.largest_process_peak_mb);
        return {
          name: `monitor -f ${EVERY} --sampling-period 0.01 -- sleep ${LONG_SECONDS}`,
          samples: Math.round(LONG_SECONDS / 0.01),
          peak_mb: peak,
          above_floor_mb: round(peak - bare.rss_mb),
          target_met: peak <= TARGET_MB,
          run,
        };
      })
    : { skipped: true };
console.log(
  JSON.stringify(
    {
      name: `monitor -f FORMAT -- sleep ${APP_SECONDS} (50 ms period): peak RSS of the tree minus the app`,
      floor: { name: 'a bare idle `node`, this run', rss_mb: bare.rss_mb },
      target_mb: TARGET_MB,
      formats: results,
      every_format_target_met: results.every((r) => r.target_met),
      long_run_every_format: long,
      load_average_1m: loadavg()[0],
    },
    null,
    1,
  ),
);
