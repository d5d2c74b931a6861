import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { roundMetrics } from '../../../src/monitor/metrics.js';
import { decideHostTotal, describeHostTotal, hostTotal } from '../../../src/monitor/model/host-total.js';
import type { Report } from '../../../src/monitor/model/report-model.js';
import type { SeriesSpec } from '../../../src/platform/signal-catalogue.js';
import { runCli } from '../../helpers/cli.js';
import { FakeGpu } from '../../helpers/fake-gpu.js';
import { onlyFile, PERUN_CHECK, python, readReport } from '../../helpers/hdf5-reports.js';
import { raplApp } from '../../helpers/rapl-app.js';
import { needsCompiler, needsH5py, requirements } from '../../helpers/requirements.js';
import { PLAIN_POST, seriesSpec } from '../../helpers/series-spec.js';
import { copyFixture, tempDir } from '../../helpers/tmp.js';

const fakeGpuAndH5py = requirements(needsCompiler(), needsH5py());

const post = PLAIN_POST;
const spec = (id: string, group: SeriesSpec['group'], outside = false) =>
  seriesSpec(id, group, 'energy', outside);

describe('host total rule', () => {
  it('a board sensor stands for cpu + ram only while it is at least their energy; outside groups are added', () => {
    const parts = (board: number) => [
      { group: 'board' as const, energy: board },
      { group: 'cpu' as const, energy: 10 },
      { group: 'ram' as const, energy: 5 },
      { group: 'gpu' as const, energy: 900, outsidePlatform: true },
      { group: 'gpu' as const, energy: 4, outsidePlatform: true },
    ];
    const plausible = hostTotal(parts(196));
    assert.equal(plausible.total.rule, 'board');
    assert.equal(plausible.energy, 196 + 904);
    assert.deepEqual(plausible.total.coveredGroups, ['cpu', 'ram']);
    assert.deepEqual(plausible.total.outsideGroups, ['gpu']);
    assert.match(
      describeHostTotal(plausible.total),
      /^board 196\.000 J ≥ cpu \+ ram 15\.000 J: board stands for cpu \+ ram; gpu 904\.000 J added/,
    );
    // A flat (unwired) psys: the parts are used, and the report says why with the figures.
    const flat = hostTotal(parts(0));
    assert.equal(flat.total.rule, 'board-not-plausible');
    assert.equal(flat.energy, 15 + 904);
    assert.match(
      describeHostTotal(flat.total),
      /^board 0\.000 J < cpu \+ ram 15\.000 J: board not plausible/,
    );
    // Equal is plausible (a board that is exactly the parts); a board alone stands.
    assert.equal(decideHostTotal(parts(15)).rule, 'board');
    assert.equal(hostTotal([{ group: 'board', energy: 7 }]).energy, 7);
    // No board: the sum of every group, never fewer.
    const sum = hostTotal(parts(0).slice(1));
    assert.equal(sum.total.rule, 'parts');
    assert.equal(sum.energy, 919);
    assert.ok(Number.isNaN(hostTotal([]).energy), 'nothing measured is NaN, never 0');
  });

  it('round metrics: the round decides, its region calls and its groups follow the same rule', () => {
    const specs = [
      spec('BOARD_ENERGY', 'board'),
      spec('CPU_ENERGY', 'cpu'),
      spec('GPU_ENERGY-gpu-0', 'gpu', true),
    ];
    const times = [0, 1, 2, 3, 4];
    const data = (board: number[]) => ({
      originMs: 0,
      times,
      values: [board, [0, 10, 20, 30, 40], [0, 100, 200, 300, 400]],
    });
    const events = [
      { name: 'r', kind: 'start' as const, t: 1 },
      { name: 'r', kind: 'stop' as const, t: 3 },
    ];
    const ok = roundMetrics(specs, data([0, 20, 40, 60, 80]), 4, events, post);
    assert.equal(ok.host.energy, 80 + 400);
    assert.equal(ok.host.total?.rule, 'board');
    assert.equal(ok.regions[0]!.energy, 40 + 200, 'the call uses the board too');
    const flat = roundMetrics(specs, data([5, 5, 5, 5, 5]), 4, events, post);
    assert.equal(flat.host.total?.rule, 'board-not-plausible');
    assert.equal(flat.host.energy, 40 + 400);
    assert.equal(flat.regions[0]!.energy, 20 + 200, 'the call uses the parts too');
    assert.equal(flat.host.groups.board!.energy, 0, 'the flat board is still reported as read');
  });

  it('a series that never gave a value is not measured: the total is what was read', () => {
    const specs = [spec('CPU_ENERGY', 'cpu'), spec('DRAM_ENERGY', 'ram'), spec('BOARD_ENERGY', 'board')];
    const nan = [Number.NaN, Number.NaN, Number.NaN];
    const m = roundMetrics(
      specs,
      { originMs: 0, times: [0, 1, 2], values: [[0, 3, 7], nan, nan] },
      2,
      [],
      post,
    );
    assert.equal(m.host.energy, 7);
    assert.deepEqual(Object.keys(m.host.groups), ['cpu']);
    assert.equal(m.host.total?.rule, 'parts');
  });
});

const jsonIn = (dir: string) => join(dir, readdirSync(dir).find((f) => f.endsWith('.json'))!);

describe('joulegate monitor: psys and two GPUs (fixture RAPL, fake NVML)', { skip: fakeGpuAndH5py }, () => {
  /** A monitor run on intel-2s (2 packages + psys) with 2 fake 100 W GPUs; psys gains `psys` J per step. */
  async function run(psys: number) {
    const root = copyFixture('energy/intel-2s');
    const out = tempDir();
    const zones = [
      { zone: 'intel-rapl:0', joules: 1 },
      { zone: 'intel-rapl:1', joules: 1 },
      { zone: 'intel-rapl:0:2', joules: 0.5 },
      { zone: 'intel-rapl:1:2', joules: 0.5 },
      ...(psys > 0 ? [{ zone: 'intel-rapl:2', joules: psys }] : []),
    ];
    const app = raplApp(out, root, zones);
    const gpus = new FakeGpu('nvml', { device_count: 2, '0.power_mw': 100000, '1.power_mw': 100000 });
    const r = await runCli(
      [
        'monitor',
        '--sampling-period',
        '0.02',
        '--format',
        'json,text,hdf5',
        '--data-out',
        out,
        '--',
        process.execPath,
        app,
      ],
      { env: { JOULEGATE_SYSROOT: root, ...gpus.env }, cwd: out },
    );
    assert.equal(r.code, 0, r.stderr);
    const report = readReport(jsonIn(out));
    const host = report.rounds[0]!.metrics.host;
    const g = host.groups;
    return {
      r,
      out,
      report,
      host,
      board: g.board!.energy,
      parts: g.cpu!.energy + g.ram!.energy,
      gpu: g.gpu!.energy,
    };
  }

  it('psys at least cpu + ram: host = psys + both GPUs; POWER, kWh, CO2 and cost follow', async () => {
    const { r, out, report, host, board, parts, gpu } = await run(5);
    assert.ok(Math.abs(parts - 30) < 1e-6, `cpu + ram ${parts} J`);
    assert.ok(Math.abs(board - 50) < 1e-6, `psys ${board} J`);
    assert.ok(gpu > 0);
    assert.deepEqual(
      report.series.filter((s) => s.outsidePlatform).map((s) => s.group),
      ['gpu', 'gpu'],
    );
    assert.equal(host.total?.rule, 'board');
    assert.equal(host.energy, board + gpu, 'exactly psys + gpus');
    assert.ok(host.energy >= gpu + board && host.energy > parts + gpu - 1e-9);
    assert.equal(host.power, host.energy / host.runtime);
    assert.ok(host.power > g(report, 'gpu').power, 'POWER includes the GPUs');
    const kwh = (host.energy * 1.0) / 3.6e6;
    assert.equal(host.co2, kwh * 230);
    assert.equal(host.money, kwh * 0.2678);
    assert.match(
      r.stdout,
      /round 0: board 50\.000 J ≥ cpu \+ ram 30\.000 J: board stands for cpu \+ ram; gpu \d+\.\d{3} J added/,
    );
    assert.match(r.stdout, /Coverage: cpu, gpu, ram and board measured/);
    // The decision and the GPUs' place outside the platform survive HDF5: perun reads the file,
    // and export rebuilds the same JSON from the tree.
    const hdf5 = onlyFile(out, /\.hdf5$/);
    const original = readFileSync(jsonIn(out), 'utf8');
    const tree = JSON.parse(await python([PERUN_CHECK, hdf5]));
    assert.equal(tree.nodes[report.runId].nodes['0'].nodes[report.host].metrics.ENERGY.value, host.energy);
    const exported = await runCli(['export', hdf5, 'json']);
    assert.equal(exported.code, 0, exported.stderr);
    assert.equal(readFileSync(exported.stdout.trim(), 'utf8'), original);
  });

  it('flat psys: the parts are used and the board is flagged with the figures', async () => {
    const { r, host, board, parts, gpu } = await run(0);
    assert.equal(board, 0);
    assert.equal(host.total?.rule, 'board-not-plausible');
    assert.equal(host.energy, parts + gpu);
    assert.match(
      r.stdout,
      /round 0: board 0\.000 J < cpu \+ ram 30\.000 J: board not plausible, the parts are used; gpu/,
    );
  });
});

function g(report: Report, group: 'gpu') {
  return report.rounds[0]!.metrics.host.groups[group]!;
}
