import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { stat } from '../../src/monitor/model/round-stats.js';
import { runCli } from '../helpers/cli.js';
import { FIXTURES_PERUN_MAKE, PERUN_CHECK, parseReport, python } from '../helpers/hdf5-reports.js';
import { needsH5py, whenMet } from '../helpers/requirements.js';
import { FIXTURES, tempDir } from '../helpers/tmp.js';

const skip = needsH5py();

/**
 * `joulegate export` of a file perun wrote: test/fixtures/perun_hdf5_make.py lays it out as
 * perun 0.9 does (h5py, perun's names, dtypes and magnitudes), with known values.
 */
const dir = tempDir();
const perunFile = join(dir, 'mnist.hdf5');
await whenMet(skip, () => python([FIXTURES_PERUN_MAKE, perunFile], 'perun_hdf5_make.py'));

async function exportTo(format: string, extra: string[] = []) {
  const out = join(dir, `out-${format}-${extra.join('')}`);
  const r = await runCli(['export', ...extra, perunFile, out, format]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
}

describe("export reads perun's .hdf5 (APP → MULTI_RUN → RUN → NODE → DEVICE → SENSOR)", { skip }, () => {
  it('takes the latest run, its totals, device groups, sensors (scaled by mag) and regions', async () => {
    const path = await exportTo('json');
    assert.match(path, /mnist_job42\.json$/);
    const report = parseReport(readFileSync(path, 'utf8'));
    assert.equal(report.app, 'mnist');
    assert.equal(report.runId, 'job42', 'the latest execution_dt');
    assert.equal(report.created, new Date('2026-02-01T09:30:00.250').toISOString(), 'naive local time');
    assert.equal(report.host, 'node01');
    const h = report.rounds[0]!.metrics.host;
    assert.deepEqual(
      [h.runtime, h.facilityEnergy, h.energy, h.power, h.co2, h.money],
      [5, 850, 850, 170, 0.25, 0.5],
    );
    assert.deepEqual(h.groups.cpu, { energy: 100, power: 20, method: 'power-integrated', util: 50 });
    assert.deepEqual(h.groups.gpu, { energy: 750, power: 150, method: 'power-integrated' });
    assert.equal(h.groups.ram!.memory, 4e9);
    assert.deepEqual(
      report.series.map((s) => [s.id, s.group, s.kind]),
      // The file's order (h5py's default: by name).
      [
        ['CPU_USAGE_0', 'cpu', 'util'],
        ['cpu_0_package-0', 'cpu', 'power'],
        ['CUDA:0_POWER', 'gpu', 'power'],
        ['RAM_USAGE', 'ram', 'memory'],
      ],
    );
    const round = report.rounds[0]!;
    assert.deepEqual(round.times, [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(round.values[1], [20, 20, 20, 20, 20, 20], 'derived power, not the µJ counter');
    assert.deepEqual(round.values[2], [150, 150, 150, 150, 150, 150], 'mW × mag 1e-3 = W');
    assert.deepEqual(round.values[3], [4e9, 4e9, 4e9, 4e9, 4e9, 4e9]);
    assert.deepEqual(report.unavailable, [
      { backend: 'perun', signal: 'CPU_FREQ_0', reason: 'raw data in "Hz" is not shown' },
    ]);
    assert.deepEqual(
      round.metrics.regions.map((c) => [c.name, c.start, c.stop, c.runtime]),
      [
        ['train', 0.5, 2.5, 2],
        ['train', 3, 4, 1],
      ],
    );
    const [train] = report.regions;
    assert.equal(train!.callsPerRound, 2);
    assert.equal(train!.power.mean, 170);
    assert.equal(train!.cpuUtil!.mean, 60);
    assert.equal(report.summary.energy!.mean, 850);
    assert.equal(report.config['benchmarking.metrics'], 'runtime,energy');
  });

  it('picks a run with -i/--id, and names the runs there are when the id is wrong', async () => {
    const report = parseReport(readFileSync(await exportTo('json', ['-i', '2026-01-01T10:00:00']), 'utf8'));
    assert.equal(report.rounds[0]!.metrics.host.groups.cpu!.energy, 50);
    const bad = await runCli(['export', '--id', 'nope', perunFile, 'json']);
    assert.equal(bad.code, 1);
    // The line names the file it read (every reader's failure does).
    assert.equal(
      bad.stderr,
      `Error: ${perunFile}: no run nope in this perun file (it has 2026-01-01T10:00:00, job42)\n`,
    );
  });

  it('writes every joulegate format; its HDF5 is one perun reads again', async () => {
    for (const format of ['text', 'csv', 'bench', 'html'])
      assert.ok((await exportTo(format)).length > 0, format);
    const text = readFileSync(await exportTo('text'), 'utf8');
    assert.match(text, /\| +0 \| +All \| 5\.000 s \| 850\.000 J \| 170\.000 W \|/);
    assert.match(text, /\| +train \| +2\.00 \| 1\.50 ± 0\.71 s \| +n\/a \| 170\.00 ± 10\.00 W \|/);
    const bench = JSON.parse(readFileSync(await exportTo('bench'), 'utf8')) as { name: string }[];
    assert.deepEqual(
      bench.map((b) => b.name),
      ['mnist - RUNTIME', 'mnist - ENERGY', 'mnist:train - RUNTIME', 'mnist:train - POWER'],
    );
    const hdf5 = await exportTo('hdf5');
    const tree = JSON.parse(await python([PERUN_CHECK, hdf5])) as {
      nodes: Record<string, { metrics: Record<string, { mean: number }> }>;
    };
    assert.equal(tree.nodes.job42!.metrics.ENERGY!.mean, 850);
    // And joulegate reads its own file of it back to the same report, but for the region power
    // and utilisation: perun keeps them only as Stats, joulegate's file per call.
    const again = await runCli(['export', hdf5, join(dir, 'again'), 'json']);
    assert.equal(again.code, 0, again.stderr);
    const withoutRegionStats = (path: string) => {
      const r = parseReport(readFileSync(path, 'utf8'));
      for (const region of r.regions) {
        region.power = stat([]);
        delete region.cpuUtil;
        delete region.gpuUtil;
      }
      return r;
    };
    assert.deepEqual(withoutRegionStats(again.stdout.trim()), withoutRegionStats(await exportTo('json')));
  });
});

/** perun's JSON export of the same file (test/fixtures/perun_json_make.py, with a bare NaN). */
const perunJson = join(dir, 'json-export', 'mnist.json');
await whenMet(skip, async () => {
  mkdirSync(dirname(perunJson), { recursive: true });
  await python([join(FIXTURES, 'perun_json_make.py'), perunFile, perunJson], 'perun_json_make.py');
});

describe("export reads perun's JSON export as well", { skip }, () => {
  it('gives the report its .hdf5 gives, run by run (-i), NaN written the Python way included', async () => {
    assert.match(readFileSync(perunJson, 'utf8'), /\bNaN\b/, 'the fixture holds a bare NaN');
    for (const id of [[], ['-i', '2026-01-01T10:00:00']]) {
      const fromJson = await runCli(['export', ...id, perunJson, join(dir, `from-json${id.length}`), 'json']);
      assert.equal(fromJson.code, 0, fromJson.stderr);
      const fromHdf5 = await exportTo('json', id);
      const a = parseReport(readFileSync(fromJson.stdout.trim(), 'utf8'));
      const b = parseReport(readFileSync(fromHdf5, 'utf8'));
      assert.deepEqual(a, b);
      assert.equal(a.runId, id.length ? '2026-01-01T10:00:00' : 'job42');
    }
    const text = await runCli(['export', perunJson, join(dir, 'from-json-text'), 'text']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      readFileSync(text.stdout.trim(), 'utf8'),
      /\| +0 \| +All \| 5\.000 s \| 850\.000 J \| 170\.000 W \|/,
    );
  });

  it('names the runs when -i is wrong, and says what is wrong with a damaged export in one line', async () => {
    const bad = await runCli(['export', '-i', 'nope', perunJson, 'json']);
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      `Error: ${perunJson}: no run nope in this perun file (it has 2026-01-01T10:00:00, job42)\n`,
    );
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"id": "mnist", "type": 1, "nodes": [{"r": {"id": "r", "type": 7}}]}');
    const r = await runCli(['export', broken, 'json']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: .*broken\.json: not a perun JSON export: .*\n$/);
    const ours = await runCli([
      'export',
      '-i',
      'x',
      join(dir, 'from-json0', readdirSync(join(dir, 'from-json0'))[0]!),
      'text',
    ]);
    assert.equal(ours.code, 1);
    assert.match(ours.stderr, /--id picks a run of perun's \.hdf5 or \.json file only\n$/);
  });
});
