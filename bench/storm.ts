/**
 * PlatformOpenSession latency while N clients start batch servers at once (bench/batch-daemon.ts
 * measureStorm, the figure of issue 13), repeated: each run with the 1-minute load average at
 * its start and end. Prints JSON. Usage: node --import tsx bench/storm.ts [--clients N] [--runs R]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateTree } from '../test/fixtures/generate.js';
import { measureStorm } from './batch-daemon.js';
import { argValue, requireBuiltDist } from './shipped.js';

requireBuiltDist('storm');

const CLIENTS = argValue('--clients', 100);
const RUNS = argValue('--runs', 3);

const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-storm-'));
try {
  const tree = join(work, 'sysroot');
  generateTree(tree, { packages: 2, coresPerPackage: 16, threadsPerCore: 2, cpufreq: 'cpu' });
  const runs = [];
  for (let run = 0; run < RUNS; run++) {
    const loadBefore = loadAverage();
    const storm = await measureStorm(work, { JOULEGATE_SYSROOT: tree }, CLIENTS);
    runs.push({ run, load_average_1min: { before: loadBefore, after: loadAverage() }, ...storm });
    process.stderr.write(`${JSON.stringify(runs.at(-1))}\n`);
  }
  process.stdout.write(`${JSON.stringify({ bench: 'storm', clients: CLIENTS, runs }, null, 2)}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
