import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { run, runCli } from '../helpers/cli.js';
import {
  monitorJsonHdf5,
  onlyFile,
  PERUN_CHECK,
  python,
  readReport,
  regionsApp,
} from '../helpers/hdf5-reports.js';
import { paddedStat, tickerSource } from '../helpers/proc-stat.js';
import { needsH5py } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const skip = needsH5py();

/**
 * The HDF5 report read by an independent HDF5 implementation (h5py on libhdf5, Debian's
 * python3-h5py) the way perun's importer reads it: test/fixtures/perun_hdf5_check.py.
 */

interface Metric {
  value?: number | null;
  mean?: number | null;
  sum?: number | null;
}
interface PerunNode {
  id: string;
  type: string;
  device_type?: string;
  metrics: Record<string, Metric>;
  nodes: Record<string, PerunNode>;
  samples?: number;
  timestamps: Record<string, string>;
  regions?: Record<
    string,
    { metrics: Record<string, Metric>; N_RUNS: Metric; raw_data: Record<string, number[]> }
  >;
}

async function perunImport(path: string): Promise<PerunNode> {
  return JSON.parse(await python([PERUN_CHECK, path], `perun's importer on ${path}`)) as PerunNode;
}

/** HDF5 keeps every float64 bit: NaN comes back as null from the JSON the checker prints. */
const same = (actual: number | null | undefined, expected: number) =>
  Number.isNaN(expected) ? assert.equal(actual, null) : assert.equal(actual, expected);

describe("HDF5 reports as perun's importer reads them", { skip }, () => {
  it('RAPL counters, two rounds, nested regions: every node, metric, sensor and region', async () => {
    const out = tempDir();
    const root = copyFixture('energy/amd-epyc');
    // The fixture's CPUs are busy half the time (its /proc/stat changes as the app runs).
    const app = regionsApp(out, paddedStat(root));
    const report = await monitorJsonHdf5(
      root,
      out,
      ['--sampling-period', '0.02', '--rounds', '2', '--app-name', 'h5app', '--run-id', 'mr1'],
      [process.execPath, app],
    );
    const tree = await perunImport(onlyFile(out, /\.hdf5$/));

    assert.equal(tree.id, 'h5app');
    assert.equal(tree.type, 'APP');
    const multi = tree.nodes.mr1!;
    assert.equal(multi.type, 'MULTI_RUN');
    // perun's naive local times (the checker refuses a zone), the report's start to the µs.
    const naive = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/;
    for (const dt of [
      tree.timestamps.creation_dt,
      tree.timestamps.last_execution_dt,
      multi.timestamps.execution_dt,
    ])
      assert.match(dt!, naive);
    assert.equal(new Date(multi.timestamps.execution_dt!).toISOString(), report.created);
    // perun's summary sentence reads the APP's Stats.
    same(tree.metrics.ENERGY!.sum, report.summary.energy!.sum);
    for (const [name, key] of [
      ['RUNTIME', 'runtime'],
      ['ENERGY', 'energy'],
      ['POWER', 'power'],
      ['CO2', 'co2'],
      ['MONEY', 'money'],
    ] as const) {
      same(multi.metrics[name]!.mean, report.summary[key]!.mean);
      same(multi.metrics[name]!.sum, report.summary[key]!.sum);
    }
    assert.deepEqual(Object.keys(multi.nodes).sort(), ['0', '1']);

    report.rounds.forEach((round, r) => {
      const runNode = multi.nodes[String(r)]!;
      assert.equal(runNode.type, 'RUN');
      same(runNode.metrics.RUNTIME!.value, round.metrics.host.runtime);
      same(runNode.metrics.ENERGY!.value, round.metrics.host.facilityEnergy);
      const host = runNode.nodes[report.host]!;
      assert.equal(host.type, 'NODE');
      same(host.metrics.ENERGY!.value, round.metrics.host.energy);
      // perun's text report reads utilisation on RUN and NODE (the checker requires every
      // device-group metric there; DRAM_MEM: hdf5-export.test.ts, whose fixture has meminfo).
      const groups = round.metrics.host.groups;
      for (const node of [runNode, host]) {
        same(node.metrics.CPU_UTIL!.value, groups.cpu!.util!);
        same(node.metrics.CPU_ENERGY!.value, groups.cpu!.energy);
      }
      const cpu = host.nodes.cpu!;
      assert.equal(cpu.device_type, 'cpu');
      assert.equal(round.metrics.host.groups.cpu!.method, 'counter');
      same(cpu.metrics.CPU_ENERGY!.value, round.metrics.host.groups.cpu!.energy);
      for (const s of report.series) {
        const sensor = host.nodes[s.group]!.nodes[s.id]!;
        assert.equal(sensor.type, 'SENSOR');
        assert.equal(sensor.samples, round.times.length, s.id);
      }
      // Regions: Stats under metrics/, N_RUNS beside them, start/stop pairs of rank 0.
      const calls = round.metrics.regions;
      assert.deepEqual(Object.keys(runNode.regions!).sort(), ['outer', 'step']);
      const steps = calls.filter((c) => c.name === 'step');
      const step = runNode.regions!.step!;
      same(step.N_RUNS.mean, 2);
      same(step.metrics.RUNTIME!.sum, steps[0]!.runtime + steps[1]!.runtime);
      same(step.metrics.ENERGY!.sum, steps[0]!.energy + steps[1]!.energy);
      // No GPU here; the CPU utilisation comes from the fixture's /proc/stat: 50 % in every call.
      for (const c of steps) assert.ok(Math.abs(c.cpuUtil! - 50) < 1e-9, `cpu util ${c.cpuUtil} %`);
      same(step.metrics.CPU_UTIL!.sum, steps[0]!.cpuUtil! + steps[1]!.cpuUtil!);
      assert.equal(step.metrics.GPU_UTIL, undefined, 'no GPU: no NaN GPU_UTIL');
      assert.deepEqual(
        step.raw_data['0'],
        steps.flatMap((c) => [c.start, c.stop]),
      );
    });
  });

  it('estimated CPU power never appears as a perun CPU_ENERGY or CPU_POWER metric', async () => {
    const out = tempDir();
    const root = copyFixture('vm-1s4c');
    const app = join(out, 'app.mjs');
    writeFileSync(
      app,
      `${tickerSource(paddedStat(root), 1, 3)}\nstartTicking(10);\nsetTimeout(stopTicking, 200);\n`,
    );
    const report = await monitorJsonHdf5(
      root,
      out,
      ['--sampling-period', '0.05', '--estimate-tdp', '100'],
      [process.execPath, app],
    );
    const cpuGroup = report.rounds[0]!.metrics.host.groups.cpu!;
    assert.equal(cpuGroup.method, 'estimated', 'this fixture has no energy source: CPU power is estimated');
    assert.ok(Number.isFinite(cpuGroup.energy));
    const tree = await perunImport(onlyFile(out, /\.hdf5$/));
    const host = tree.nodes[report.runId]!.nodes['0']!.nodes[report.host]!;
    assert.ok(host.nodes.cpu, 'the cpu device group is written');
    assert.deepEqual(
      Object.keys(host.nodes.cpu!.metrics).filter((m) => /ENERGY|POWER/.test(m)),
      [],
    );
    // Only estimated: no ENERGY or POWER metric anywhere (never a NaN one); the estimate is an attribute.
    const run = tree.nodes[report.runId]!.nodes['0']!;
    for (const node of [tree, tree.nodes[report.runId]!, run, host])
      assert.deepEqual(
        Object.keys(node.metrics).filter((m) => /ENERGY|POWER|CO2|MONEY/.test(m)),
        [],
        node.id,
      );
    assert.ok(Number.isFinite(report.rounds[0]!.metrics.host.estimatedEnergy));
    assert.ok(run.metrics.CPU_UTIL, 'utilisation is measured, so it is there');
  });
});

describe('one-value Stats as perun stores them', { skip }, () => {
  it("one round, one call: std 0.0 in the file (perun's bench JSON is valid), NaN again in joulegate's report", async () => {
    const out = tempDir();
    const root = copyFixture('vm-1s4c');
    const report = await monitorJsonHdf5(
      root,
      out,
      ['--sampling-period', '0.02', '--app-name', 'one', '--run-id', 'r1'],
      [process.execPath, regionsApp(out)],
    );
    assert.ok(Number.isNaN(report.summary.runtime!.std), 'one round: no spread in the report');
    const file = onlyFile(out, /\.hdf5$/);
    await perunImport(file); // the checker refuses a NaN std
    // What perun's bench export does with the file's Stats: each std becomes a "range".
    const bench = await python([
      '-c',
      `import h5py, json
ranges = []
def visit(name, obj):
    if isinstance(obj, h5py.Group) and "std" in obj.attrs:
        ranges.append({"name": name, "range": float(obj.attrs["std"])})
with h5py.File(${JSON.stringify(file)}, "r") as f:
    f.visititems(visit)
print(json.dumps(ranges, allow_nan=False))
`,
    ]);
    const ranges = JSON.parse(bench) as { name: string; range: number }[];
    const names = ranges.map((r) => r.name);
    for (const name of [
      'one/metrics/RUNTIME',
      'one/nodes/r1/metrics/RUNTIME',
      'one/nodes/r1/nodes/0/regions/outer/metrics/RUNTIME',
    ])
      assert.ok(names.includes(name), `${name} in ${names.join(' ')}`);
    const rangeOf = (name: string) => ranges.find((r) => r.name === name)!.range;
    assert.equal(rangeOf('one/metrics/RUNTIME'), 0);
    assert.equal(rangeOf('one/nodes/r1/nodes/0/regions/outer/metrics/RUNTIME'), 0);
    // The two step calls (30 and 40 ms) have a spread, which stays.
    assert.ok(rangeOf('one/nodes/r1/nodes/0/regions/step/metrics/RUNTIME') > 0.001);
    // joulegate reads its own one-value Stats back as no spread.
    const r = await runCli(['export', file, 'json']);
    assert.equal(r.code, 0, r.stderr);
    const again = readReport(r.stdout.trim());
    assert.ok(Number.isNaN(again.summary.power!.std) && Number.isNaN(again.summary.runtime!.std));
    assert.equal(again.summary.runtime!.mean, report.summary.runtime!.mean);
  });
});

describe("the checker encodes perun's rules", { skip }, () => {
  it('refuses region metrics beside metrics/, zoned timestamps, NaN metrics and missing RUN metrics', async () => {
    const out = tempDir();
    const root = copyFixture('vm-1s4c');
    const report = await monitorJsonHdf5(
      root,
      out,
      ['--sampling-period', '0.02', '--app-name', 'bad', '--run-id', 'r'],
      [process.execPath, regionsApp(out, paddedStat(root))],
    );
    const file = onlyFile(out, /\.hdf5$/);
    await perunImport(file); // as written: accepted
    const round = '/bad/nodes/r/nodes/0';
    // What joulegate wrote before (and perun cannot read), one change each.
    await python([
      '-c',
      `import h5py, numpy as np
with h5py.File(${JSON.stringify(file)}, "r+") as f:
    step = f["${round}/regions/step"]
    f.move(step.name + "/metrics/RUNTIME", step.name + "/RUNTIME")
    f["/bad/nodes/r"].attrs["execution_dt"] = "2026-01-01T00:00:00.000Z"
    f["${round}/metrics/RUNTIME"].attrs["value"] = np.nan
    del f["${round}/metrics/CPU_UTIL"]
`,
    ]);
    const r = await runChecker(file);
    assert.equal(r.code, 1);
    const lines = r.stdout.trim().split('\n').sort();
    assert.deepEqual(
      lines,
      [
        `/bad/nodes/r: execution_dt '2026-01-01T00:00:00.000Z' has a time zone; perun writes naive times`,
        `${round}/metrics/RUNTIME: value is NaN (leave out what was not measured)`,
        `${round}/regions/step: RUNTIME beside metrics/ (perun reads only metrics, N_RUNS, raw_data)`,
        `${round}/regions/step: no RUNTIME metric`,
        `${round}: no CPU_UTIL metric, which its cpu device group has`,
      ].sort(),
    );
    assert.ok(report.rounds[0]!.metrics.host.groups.cpu!.util! > 0);
  });
});

/** The checker's exit status and output, without failing on a non-zero exit. */
const runChecker = (file: string) => run('/usr/bin/python3', [PERUN_CHECK, file]);
