import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { renderText } from '../../src/report/text.js';
import { runCli } from '../helpers/cli.js';
import { FIXTURES_PERUN_MAKE, onlyFile, python } from '../helpers/hdf5-reports.js';
import { mutate, NATIVE_TEXT } from '../helpers/mutations.js';
import { seededRandom } from '../helpers/random.js';
import { needsH5py } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';

// The built reader: its worker runs dist/report/read-worker.js as the CLI does. (From source,
// the worker would load h5wasm's 4 MB of JavaScript through tsx: seconds per worker.)
const { ReportReader, readLimits, WALL_FACTOR } = (await import(
  new URL('../../dist/report/bounded-read.js', import.meta.url).href
)) as typeof import('../../src/report/bounded-read.js');

const MUTATIONS = 200;
/** Margin over a read's deadline for the event loop of a loaded machine. */
const SLACK_MS = 3000;
const RSS_BOUND = 300 * (1 << 20);

/** A real report of a short monitor run, as json and hdf5. */
async function realReports(): Promise<{ dir: string; json: string; hdf5: string }> {
  const dir = tempDir();
  const r = await runCli(
    ['monitor', '--format', 'json,hdf5', '--data-out', dir, '--app-name', 'fz', '--', 'sleep', '0.2'],
    { cwd: dir },
  );
  assert.equal(r.code, 0, r.stderr);
  return { dir, json: onlyFile(dir, /\.json$/), hdf5: onlyFile(dir, /\.hdf5$/) };
}

const reports = await realReports();
const reader = new ReportReader();
after(() => reader.close());

/** Reads `count` seeded mutations of `original`; every one ends in time, whole or in one line. */
async function fuzz(
  original: string,
  seed: number,
  count = MUTATIONS,
): Promise<{ read: number; refused: number }> {
  const bytes = readFileSync(original);
  const random = seededRandom(seed);
  const path = join(reports.dir, `damaged${original.slice(original.lastIndexOf('.'))}`);
  // The CPU budget holds however busy the machine; wall-clock time is bounded at WALL_FACTOR × it.
  const deadline = readLimits(bytes.length).deadlineMs * WALL_FACTOR + SLACK_MS;
  let read = 0;
  let refused = 0;
  for (let n = 0; n < count; n++) {
    const { kind, bytes: damaged } = mutate(bytes, random);
    writeFileSync(path, damaged);
    const started = performance.now();
    const what = `mutation ${n} (seed ${seed}, ${kind})`;
    let report: Report | undefined;
    try {
      report = await reader.read(path);
    } catch (err) {
      const line = (err as Error).message;
      assert.ok(line.startsWith(path), `${what}: the error names the file: ${line}`);
      assert.doesNotMatch(line, /\n/, `${what}: one line`);
      assert.doesNotMatch(line, NATIVE_TEXT, `${what}: no native text`);
      assert.ok(line.length < 600, `${what}: a short line (${line.length})`);
      refused++;
    }
    if (report) {
      // What a read gives back is a report the renderers take.
      assert.ok(renderText(report).length > 0, what);
      read++;
    }
    assert.ok(performance.now() - started < deadline, `${what}: ended within ${deadline} ms`);
    assert.ok(process.memoryUsage().rss < RSS_BOUND, `${what}: RSS ${process.memoryUsage().rss >> 20} MB`);
  }
  return { read, refused };
}

describe('export reads damaged report files within bounds, ending in a report or one line', () => {
  it('the undamaged reports read back', async () => {
    const fromJson = await reader.read(reports.json);
    const fromHdf5 = await reader.read(reports.hdf5);
    assert.equal(fromJson.app, 'fz');
    assert.equal(fromHdf5.runId, fromJson.runId);
  });

  it(`${MUTATIONS} mutations of a real HDF5 report`, async () => {
    const { refused } = await fuzz(reports.hdf5, 22);
    assert.ok(refused > MUTATIONS / 10, `most damage is noticed: ${refused} refused`);
  });

  it(`${MUTATIONS} mutations of a real JSON report`, async () => {
    const { refused } = await fuzz(reports.json, 23);
    assert.ok(refused > MUTATIONS / 2, `most damage is noticed: ${refused} refused`);
  });

  it('100 mutations of a file laid out as perun writes it (h5py)', { skip: needsH5py() }, async () => {
    const perun = join(reports.dir, 'mnist.hdf5');
    await python([FIXTURES_PERUN_MAKE, perun], 'perun_hdf5_make.py');
    assert.equal((await reader.read(perun)).app, 'mnist');
    const { refused } = await fuzz(perun, 24, 100);
    assert.ok(refused > 10, `most damage is noticed: ${refused} refused`);
  });

  it('a JSON report with a wrong type deep inside, or nested 100 000 deep: one line naming the place', async () => {
    const report = JSON.parse(readFileSync(reports.json, 'utf8'));
    report.rounds[0].metrics.host.groups = { cpu: { energy: 'lots' } };
    const wrong = join(reports.dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify(report));
    await assert.rejects(
      reader.read(wrong),
      /wrong\.json: not a joulegate report: rounds\.0\.metrics\.host\.groups\.cpu/,
    );
    const deep = join(reports.dir, 'deep.json');
    writeFileSync(
      deep,
      `{"kind":"joulegate-report","version":1,"rounds":[],"app":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    );
    await assert.rejects(
      reader.read(deep),
      (err: Error) => err.message.startsWith(deep) && !err.message.includes('\n'),
    );
  });

  it('a file that needs more memory or time than its size allows ends in one line', async () => {
    // A fresh thread with a heap too small for h5wasm's JavaScript.
    const fresh = new ReportReader();
    const small = { deadlineMs: 20_000, heapMb: 8, wasmBytes: 64 << 20 };
    await assert.rejects(
      fresh.read(reports.hdf5, undefined, small),
      /\.hdf5: reading it needs more than 8 MB/,
    );
    fresh.close();
    const quick = { ...readLimits(0), deadlineMs: 1 };
    await assert.rejects(
      reader.read(reports.hdf5, undefined, quick),
      /\.hdf5: reading it took over 0\.001 s/,
    );
    // The reader is sound after both.
    assert.equal((await reader.read(reports.json)).app, 'fz');
  });
});
