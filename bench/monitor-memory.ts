// Memory of `joulegate monitor` over many rounds (the installed command, dist/): peak RSS (GNU
// time) and the JSON report's size of `monitor --rounds N -- true` for growing N. Before rounds
// were bounded, RSS and the report grew with every round (808 MB RSS at --rounds 1e9, a 183 MB
// JSON on Ctrl-C); now both should level off. Prints one JSON object.
//
// Env: BENCH_MEMORY_ROUNDS (default "10,100,1000,10000"), the round counts; the ratios compare
// the last with the first and with the second-to-last. 10,000 rounds of `true` take 30–90 s on
// the project VMs (each round starts a process and samples at its start and end).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBuiltDist } from './shipped.js';

requireBuiltDist('monitor-memory');
const JOULEGATE = new URL('../bin/joulegate', import.meta.url).pathname;
const COUNTS = (process.env.BENCH_MEMORY_ROUNDS ?? '10,100,1000,10000').split(',').map(Number);
if (COUNTS.length < 2 || !COUNTS.every((n) => Number.isInteger(n) && n > 0)) {
  console.error('bench/monitor-memory: BENCH_MEMORY_ROUNDS must list two or more positive integers');
  process.exit(2);
}

interface Run {
  rounds: number;
  wall_s: number;
  peak_rss_mb: number;
  json_kb: number;
}

const round = (x: number, digits = 3) => Number(x.toFixed(digits));

function monitorRounds(rounds: number): Run {
  const out = mkdtempSync(join(tmpdir(), 'joulegate-bench-mem-'));
  try {
    const t0 = performance.now();
    const r = spawnSync(
      '/usr/bin/time',
      [
        '-f',
        'BENCH %M',
        JOULEGATE,
        'monitor',
        '--rounds',
        String(rounds),
        '--format',
        'json',
        '--data-out',
        out,
        '--',
        'true',
      ],
      { encoding: 'utf8', cwd: out, maxBuffer: 64 << 20 },
    );
    const wall = (performance.now() - t0) / 1000;
    if (r.status !== 0) throw new Error(`monitor --rounds ${rounds} failed: ${r.stderr}`);
    const rssKb = Number(r.stderr.trim().split('\n').pop()!.split(' ')[1]);
    const json = readdirSync(out).find((f) => f.endsWith('.json'))!;
    return {
      rounds,
      wall_s: round(wall),
      peak_rss_mb: round(rssKb / 1024, 1),
      json_kb: round(statSync(join(out, json)).size / 1024, 1),
    };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

const runs = COUNTS.map(monitorRounds);
const first = runs[0]!;
const last = runs.at(-1)!;
const before = runs.at(-2)!;
console.log(
  JSON.stringify(
    {
      name: 'monitor --rounds N --format json -- true: peak RSS and report size by N',
      runs,
      rss_ratio_last_to_first: round(last.peak_rss_mb / first.peak_rss_mb),
      rss_ratio_last_to_previous: round(last.peak_rss_mb / before.peak_rss_mb),
      json_ratio_last_to_previous: round(last.json_kb / before.json_kb),
      target_rss_ratio: 1.2,
      load_average_1m: loadavg()[0],
    },
    null,
    1,
  ),
);
