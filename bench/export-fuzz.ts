// `joulegate export`'s reader on damaged files (issue 22, item 2): ≥ 10,000 seeded mutations
// each of a real HDF5 and a real JSON report (bit flips, truncations, byte runs, length fields
// set huge; test/helpers/mutations.ts), read one after another by the built reader
// (dist/report/bounded-read.js), as the CLI reads them. Per file kind: how many read whole and
// how many were refused, hangs (a read over 5 s), refusals by deadline, the slowest read, and
// whether every error was one line naming the file with no native text. Peak RSS is the
// kernel's high-water mark of this process (VmHWM: the reader's worker threads included);
// target < 200 MB. Prints one JSON object.
//
// Args: --mutations N (default 10000) per file kind; --seed S (default 1).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { mutate, NATIVE_TEXT } from '../test/helpers/mutations.js';
import { seededRandom } from '../test/helpers/random.js';
import { argValue, distPath, importDist, requireBuiltDist } from './shipped.js';

requireBuiltDist('export-fuzz');
const MUTATIONS = argValue('--mutations', 10_000);
const SEED = argValue('--seed', 1);
const HANG_MS = 5000;
const TARGET_RSS_MB = 200;
const { ReportReader } =
  await importDist<typeof import('../src/report/bounded-read.js')>('report/bounded-read.js');

const dir = mkdtempSync(join(tmpdir(), 'joulegate-export-fuzz-'));
const made = spawnSync(
  process.execPath,
  [
    distPath('app/joulegate-loader.js'),
    'monitor',
    '--format',
    'json,hdf5',
    '--data-out',
    dir,
    '--app-name',
    'fz',
    '--',
    'sleep',
    '0.5',
  ],
  { cwd: dir, encoding: 'utf8' },
);
if (made.status !== 0) throw new Error(`bench/export-fuzz: monitor failed: ${made.stderr}`);
const fileOf = (ext: string) => join(dir, readdirSync(dir).find((f) => f.endsWith(ext))!);

/** The kernel's peak RSS of this process, MB. */
const peakRssMb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

const reader = new ReportReader();

async function fuzz(original: string, seed: number) {
  const bytes = readFileSync(original);
  const random = seededRandom(seed);
  const path = join(dir, `damaged${original.slice(original.lastIndexOf('.'))}`);
  const tally = { mutations: MUTATIONS, read: 0, refused: 0, hangs: 0, deadline_refusals: 0, slowest_ms: 0 };
  const badLines: string[] = [];
  for (let n = 0; n < MUTATIONS; n++) {
    writeFileSync(path, mutate(bytes, random).bytes);
    const started = performance.now();
    try {
      await reader.read(path);
      tally.read++;
    } catch (err) {
      const line = (err as Error).message;
      tally.refused++;
      if (/took over/.test(line)) tally.deadline_refusals++;
      if (line.includes('\n') || NATIVE_TEXT.test(line) || !line.startsWith(path))
        badLines.push(`#${n}: ${line.slice(0, 200)}`);
    }
    const ms = performance.now() - started;
    if (ms > HANG_MS) tally.hangs++;
    tally.slowest_ms = Math.max(tally.slowest_ms, Math.round(ms));
  }
  return {
    file_bytes: bytes.length,
    ...tally,
    every_error_one_line: badLines.length === 0,
    bad_lines: badLines.slice(0, 5),
  };
}

const started = performance.now();
const hdf5 = await fuzz(fileOf('.hdf5'), SEED);
const json = await fuzz(fileOf('.json'), SEED + 1);
reader.close();
rmSync(dir, { recursive: true, force: true });
const peak = peakRssMb();
console.log(
  JSON.stringify(
    {
      bench: 'export-fuzz',
      seed: SEED,
      hdf5,
      json,
      peak_rss_mb: Math.round(peak),
      target_rss_mb: TARGET_RSS_MB,
      within_targets:
        hdf5.hangs + json.hangs === 0 &&
        peak < TARGET_RSS_MB &&
        hdf5.every_error_one_line &&
        json.every_error_one_line,
      seconds: Math.round((performance.now() - started) / 1000),
      load_average: loadavg()[0],
    },
    null,
    1,
  ),
);
