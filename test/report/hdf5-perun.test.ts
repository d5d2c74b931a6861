import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { monitorJsonHdf5, onlyFile, PERUN_CHECK, python, regionsApp } from '../helpers/hdf5-reports.js';
import { paddedStat, tickerSource } from '../helpers/proc-stat.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

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
  regions?: Record<string, { metrics: Record<string, Metric>; raw_data: Record<string, number[]> }>;
}

async function perunImport(path: string): Promise<PerunNode> {
  return JSON.parse(await python([PERUN_CHECK, path], `perun's importer on ${path}`)) as PerunNode;
}

/** HDF5 keeps every float64 bit: NaN comes back as null from the JSON the checker prints. */
const same = (actual: number | null | undefined, expected: number) =>
  Number.isNaN(expected) ? assert.equal(actual, null) : assert.equal(actual, expected);

describe("HDF5 reports as perun's importer reads them", () => {
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
      const cpu = host.nodes.cpu!;
      assert.equal(cpu.device_type, 'cpu');
      assert.equal(round.metrics.host.groups.cpu!.method, 'counter');
      same(cpu.metrics.CPU_ENERGY!.value, round.metrics.host.groups.cpu!.energy);
      for (const s of report.series) {
        const sensor = host.nodes[s.group]!.nodes[s.id]!;
        assert.equal(sensor.type, 'SENSOR');
        assert.equal(sensor.samples, round.times.length, s.id);
      }
      // Regions: perun's five Stats plus ENERGY, and start/stop pairs of rank 0.
      const calls = round.metrics.regions;
      assert.deepEqual(Object.keys(runNode.regions!).sort(), ['outer', 'step']);
      const steps = calls.filter((c) => c.name === 'step');
      const step = runNode.regions!.step!;
      same(step.metrics.N_RUNS!.mean, 2);
      same(step.metrics.RUNTIME!.sum, steps[0]!.runtime + steps[1]!.runtime);
      same(step.metrics.ENERGY!.sum, steps[0]!.energy + steps[1]!.energy);
      // No GPU here; the CPU utilisation comes from the fixture's /proc/stat: 50 % in every call.
      for (const c of steps) assert.ok(Math.abs(c.cpuUtil! - 50) < 1e-9, `cpu util ${c.cpuUtil} %`);
      same(step.metrics.CPU_UTIL!.sum, steps[0]!.cpuUtil! + steps[1]!.cpuUtil!);
      same(step.metrics.GPU_UTIL!.mean, Number.NaN);
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
    same(host.metrics.ENERGY!.value, Number.NaN);
  });
});
