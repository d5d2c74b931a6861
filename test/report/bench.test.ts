import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { type BenchEntry, renderBench } from '../../src/report/bench.js';
import { monitorJsonHdf5, regionsApp } from '../helpers/hdf5-reports.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

// One real run with regions (outer around two 30–40 ms steps) on a fixture with energy counters.
const out = tempDir();
const report = await monitorJsonHdf5(
  copyFixture('energy/amd-epyc'),
  out,
  ['--sampling-period', '0.02', '--app-name', 'b', '--run-id', 'first'],
  [process.execPath, regionsApp(out)],
);
const bench = (r: Report) => JSON.parse(renderBench(r)) as BenchEntry[];
const withRuntime = (r: Report, seconds: number): Report => ({
  ...r,
  runId: `run-${seconds}`,
  summary: { ...r.summary, runtime: { ...r.summary.runtime!, mean: seconds } },
});

describe('bench format', () => {
  it('names series by app and metric (regions app:region), without the run id', () => {
    const names = bench(report).map((e) => e.name);
    assert.deepEqual(names, [
      'b - RUNTIME',
      'b - ENERGY',
      'b:outer - RUNTIME',
      'b:outer - ENERGY',
      'b:step - RUNTIME',
      'b:step - ENERGY',
    ]);
    assert.deepEqual(
      bench({ ...report, runId: 'second' }).map((e) => e.name),
      names,
      'another run, the same series',
    );
  });

  it('gives every runtime in seconds whatever its size, and energy in the configured kJ', () => {
    for (const e of bench(report)) assert.equal(e.unit, e.name.endsWith('RUNTIME') ? 's' : 'kJ', e.name);
    const step = bench(report).find((e) => e.name === 'b:step - RUNTIME')!;
    assert.ok(step.value > 0.029 && step.value < 0.5, `step ${step.value} s`);
    // 0.9 s and 1.1 s: the same unit, not 900 ms next to 1.1 s.
    const [short, long] = [0.9, 1.1].map((s) => bench(withRuntime(report, s))[0]!);
    assert.deepEqual([short!.unit, short!.value, long!.unit, long!.value], ['s', 0.9, 's', 1.1]);
    // A configured prefix still applies ([benchmarking.units] second = m).
    const ms = bench({ ...report, config: { ...report.config, 'benchmarking.units.second': 'm' } })[0]!;
    assert.equal(ms.unit, 'ms');
    assert.ok(Math.abs(ms.value - report.summary.runtime!.mean * 1000) < 1e-9);
  });
});
