import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import {
  monitorJsonHdf5,
  onlyFile,
  PERUN_CHECK,
  parseReport,
  python,
  readReport,
  regionsApp,
} from '../helpers/hdf5-reports.js';
import { needsH5py } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const skip = needsH5py();

/*
 * `joulegate export FILE.hdf5 json` rebuilds the report from the HDF5 tree: checked against the
 * JSON report of the same run, and by editing the tree with h5py (libhdf5, an independent HDF5
 * implementation) and finding every edit in the export.
 */

/** Applies edits to an HDF5 file: an attribute's value, or one element of a 1-D dataset. */
const EDIT = `
import json, sys
import h5py
with h5py.File(sys.argv[1], "r+") as f:
    for e in json.loads(sys.argv[2]):
        node = f[e["path"]]
        if "attr" in e:
            node.attrs[e["attr"]] = e["value"]
        else:
            data = node[...]
            data[e["index"]] = e["value"]
            node[...] = data
`;

/** Every attribute (path, name) whose text holds a whole JSON report. */
const FIND_EMBEDDED = `
import sys
import h5py
found = []
def visit(name, obj):
    for key, value in obj.attrs.items():
        text = value.decode() if isinstance(value, bytes) else str(value)
        if "joulegate-report" in text or key == "joulegate_report":
            found.append(f"{name}@{key}")
with h5py.File(sys.argv[1], "r") as f:
    visit("/", f)
    f.visititems(visit)
print("\\n".join(found))
`;

type Edit = { path: string; value: number | string } & ({ attr: string } | { index: number });

/** A monitor run on a fixture with nested and repeated regions, written as json and hdf5. */
async function monitorRun(fixture: string): Promise<{ json: string; hdf5: string }> {
  const out = tempDir();
  const command = [process.execPath, regionsApp(out)];
  const options = ['--sampling-period', '0.02', '--rounds', '2', '--app-name', 'xp', '--run-id', 'e1'];
  await monitorJsonHdf5(copyFixture(fixture), out, options, command);
  return { json: onlyFile(out, /\.json$/), hdf5: onlyFile(out, /\.hdf5$/) };
}

async function exportJson(hdf5: string): Promise<string> {
  const r = await runCli(['export', hdf5, 'json']);
  assert.equal(r.code, 0, r.stderr);
  return readFileSync(r.stdout.trim(), 'utf8');
}

// One run with RAPL energy counters, one with memory, disk and network bytes and estimated CPU power.
const runs = {
  'energy/amd-epyc': await monitorRun('energy/amd-epyc'),
  'server-2s4c2t': await monitorRun('server-2s4c2t'),
};

describe('export of an HDF5 report', { skip }, () => {
  for (const [fixture, files] of Object.entries(runs)) {
    it(`rebuilds the run's JSON report from the tree alone (${fixture})`, async () => {
      const original = readFileSync(files.json, 'utf8');
      const exported = await exportJson(files.hdf5);
      assert.deepEqual(parseReport(exported), parseReport(original));
      // Every float64 is stored exactly and every key in its order: the same bytes.
      assert.equal(exported, original);
      assert.equal(await python(['-c', FIND_EMBEDDED, files.hdf5]), '\n', 'no copy of the report is stored');
    });
  }

  it('perun reads values above 2^31 whole (DRAM_MEM of a host with 4.7 GB in use)', async () => {
    const report = readReport(runs['server-2s4c2t'].json);
    const memory = report.rounds[0]!.metrics.host.groups.ram!.memory!;
    assert.ok(memory > 2 ** 31, `the fixture's memory in use is large: ${memory}`);
    const tree = JSON.parse(await python([PERUN_CHECK, runs['server-2s4c2t'].hdf5]));
    const run = tree.nodes.e1.nodes['0'];
    assert.equal(run.nodes[report.host].nodes.ram.metrics.DRAM_MEM.value, memory);
    // …and on RUN and NODE, where perun's text report reads it.
    assert.equal(run.nodes[report.host].metrics.DRAM_MEM.value, memory);
    assert.equal(run.metrics.DRAM_MEM.value, memory);
  });

  it('shows edits made to the tree with h5py: it is read from the tree', async () => {
    const { json, hdf5 } = runs['energy/amd-epyc'];
    const original = readReport(json);
    const file = join(tempDir(), 'edited.hdf5');
    copyFileSync(hdf5, file);
    const run0 = '/xp/nodes/e1/nodes/0';
    const run1 = '/xp/nodes/e1/nodes/1';
    const host = (run: string) => `${run}/nodes/${original.host}`;
    const k = original.series.findIndex((s) => s.kind === 'energy');
    const s = original.series[k]!;
    const firstStep = original.rounds[0]!.metrics.regions.findIndex((c) => c.name === 'step');
    const oldStart = original.rounds[0]!.metrics.regions[firstStep]!.start;
    const edits: Edit[] = [
      { path: `${host(run1)}/nodes/${s.group}/nodes/${s.id}/raw_data/values`, index: 3, value: 12345.5 },
      { path: `${run0}/metrics/ENERGY`, attr: 'value', value: 777.25 },
      { path: `${host(run1)}/nodes/cpu/metrics/CPU_ENERGY`, attr: 'value', value: 42.5 },
      { path: `${run0}/regions/step/raw_data/0`, index: 0, value: oldStart - 0.125 },
      { path: '/xp/nodes/e1', attr: 'failure', value: 'edited with h5py' },
      { path: '/xp/nodes/e1', attr: 'monitor.estimate_tdp', value: '99' },
    ];
    await python(['-c', EDIT, file, JSON.stringify(edits)]);
    const exported = parseReport(await exportJson(file));

    const expected = structuredClone(original);
    expected.rounds[1]!.values[k]![3] = 12345.5;
    expected.rounds[0]!.metrics.host.facilityEnergy = 777.25;
    expected.rounds[1]!.metrics.host.groups.cpu!.energy = 42.5;
    const call = expected.rounds[0]!.metrics.regions[firstStep]!;
    call.start = oldStart - 0.125;
    call.runtime = call.stop - call.start;
    expected.failure = 'edited with h5py';
    expected.config['monitor.estimate_tdp'] = '99';
    // The region summary is a statistic of the calls: it follows the edited start.
    const { regions, ...rest } = exported;
    const { regions: _, ...expectedRest } = expected;
    assert.deepEqual(rest, expectedRest);
    const steps = exported.rounds.flatMap((r) => r.metrics.regions.filter((c) => c.name === 'step'));
    const step = regions.find((r) => r.name === 'step')!;
    assert.equal(
      step.runtime.sum,
      steps.reduce((a, c) => a + c.runtime, 0),
    );
    assert.equal(step.runtime.max, Math.max(...steps.map((c) => c.runtime)));
    assert.ok(step.runtime.max >= 0.125, 'the edited call is 125 ms longer');
  });

  it('refuses a file that is not a joulegate report with one line naming what is missing', async () => {
    const dir = tempDir();
    const notHdf5 = join(dir, 'text.hdf5');
    writeFileSync(notHdf5, 'not hdf5\n');
    const other = join(dir, 'other.hdf5');
    await python(['-c', 'import sys, h5py\nh5py.File(sys.argv[1], "w").create_group("x/y")', other]);
    const broken = join(dir, 'broken.hdf5');
    copyFileSync(runs['energy/amd-epyc'].hdf5, broken);
    const drop =
      'import sys, h5py\nwith h5py.File(sys.argv[1], "r+") as f: del f[sys.argv[2]].attrs["exit_status"]';
    await python(['-c', drop, broken, '/xp/nodes/e1/nodes/1']);
    for (const [file, message] of [
      [notHdf5, 'not an HDF5 file'],
      [other, 'not a joulegate HDF5 report: no group /x/nodes'],
      [broken, 'not a joulegate HDF5 report: /xp/nodes/e1/nodes/1: no attribute exit_status'],
    ] as const) {
      const r = await runCli(['export', file, 'json']);
      assert.equal(r.code, 1);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, `Error: ${file}: ${message}\n`);
    }
  });
});
