import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { runCli } from '../helpers/cli.js';
import { onlyFile, parseReport, regionsApp } from '../helpers/hdf5-reports.js';
import { paddedStat } from '../helpers/proc-stat.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

// One run with utilisation, memory, disk and network bytes, an estimate and regions: every
// number in every format has a unit, ratios are percent, CO2 is grams.
const out = tempDir();
const root = copyFixture('server-2s4c2t');
const app = regionsApp(out, paddedStat(root));
const run = await runCli(
  [
    'monitor',
    '--sampling-period',
    '0.02',
    '--format',
    'json,csv,text,bench',
    '--data-out',
    out,
    '--app-name',
    'units',
    '--',
    process.execPath,
    app,
  ],
  { env: { JOULEGATE_SYSROOT: root }, cwd: out },
);
assert.equal(run.code, 0, run.stderr);
const jsonText = readFileSync(onlyFile(out, /\d\.json$/), 'utf8');
const report: Report = parseReport(jsonText);

/** Every numeric value of the JSON with the key it is under (array elements take the array's). */
function numericKeys(value: unknown, key: string, path: string, out: { key: string; path: string }[]): void {
  if (typeof value === 'number' || value === null) out.push({ key, path });
  else if (Array.isArray(value)) {
    value.forEach((v, i) => {
      numericKeys(v, key, `${path}[${i}]`, out);
    });
  } else if (typeof value === 'object')
    for (const [k, v] of Object.entries(value as object)) numericKeys(v, k, `${path}.${k}`, out);
}

describe('units', () => {
  it('JSON: the units table names a unit for every number in the report', () => {
    const units = report.units!;
    assert.ok(units, 'the report carries its units table');
    const found: { key: string; path: string }[] = [];
    numericKeys(JSON.parse(jsonText), '', '', found);
    const STAT = new Set(['mean', 'std', 'min', 'max', 'sum']);
    const DEVICE_GROUPS = new Set(['cpu', 'gpu', 'ram', 'disk', 'net', 'board']);
    const missing = found.filter(({ key, path }) => {
      if (key === 'values' && /^\.rounds\[\d+\]\.values\[\d+\]/.test(path)) return false; // samples: by kind
      const parent =
        path
          .split('.')
          .at(-2)
          ?.replace(/\[\d+\]$/, '') ?? '';
      if (STAT.has(key) || DEVICE_GROUPS.has(key)) return units.fields[parent] === undefined;
      return units.fields[key] === undefined && key !== 'version' && key !== 'index';
    });
    assert.deepEqual(
      missing.map((m) => m.path),
      [],
    );
    for (const kind of new Set(report.series.map((s) => s.kind)))
      assert.ok(units.samples[kind] !== undefined, kind);
    assert.equal(units.fields.util, '%');
    assert.equal(units.fields.coverage, '%');
    assert.equal(units.samples.util, '%');
    assert.equal(units.fields.co2, 'g');
    assert.equal(units.fields.money, report.priceUnit);
  });

  it('one convention for ratios: raw utilisation samples and the metrics are both percent', () => {
    const i = report.series.findIndex((s) => s.group === 'cpu' && s.kind === 'util');
    const samples = report.rounds[0]!.values[i]!.filter(Number.isFinite);
    // The app keeps the fixture's CPUs busy half the time.
    assert.ok(
      samples.every((v) => Math.abs(v - 50) < 1e-9),
      samples.join(' '),
    );
    assert.ok(Math.abs(report.rounds[0]!.metrics.host.groups.cpu!.util! - 50) < 1e-9);
    for (const call of report.rounds[0]!.metrics.regions) assert.ok(Math.abs(call.cpuUtil! - 50) < 1e-9);
    assert.ok(report.sources.every((s) => s.method !== 'estimated' || s.wattsPerUnit! * 100 > 0));
  });

  it('CSV: every row has a unit', () => {
    const rows = readFileSync(onlyFile(out, /\.csv$/), 'utf8')
      .trim()
      .split('\n')
      .slice(1);
    assert.ok(rows.length > 0);
    const unitOf = (row: string) => row.split(',')[6];
    assert.deepEqual(
      rows.filter((r) => !unitOf(r)),
      [],
    );
    assert.ok(rows.some((r) => r.includes(',util,%,')));
    assert.ok(rows.some((r) => r.includes(',bytes,B,')));
  });

  it('CO2 is grams everywhere: JSON, text and bench agree', () => {
    const co2 = report.summary.co2!.sum;
    const estimate = report.summary.estimated_energy!.sum;
    assert.ok(Number.isNaN(co2), 'nothing measured on this fixture');
    const grams = (estimate / 3.6e6) * 230;
    assert.match(
      run.stdout,
      new RegExp(
        `ESTIMATED from CPU utilisation and TDP: .* kWh, ${grams.toPrecision(3).replace('.', '\\.')} gCO2e`,
      ),
    );
    const bench = JSON.parse(readFileSync(onlyFile(out, /\.bench\.json$/), 'utf8')) as {
      name: string;
      unit: string;
    }[];
    for (const e of bench.filter((b) => b.name.endsWith('CO2'))) assert.match(e.unit, /g$/);
  });

  it('the text shows what the energy figures cover', () => {
    assert.match(run.stdout, /^Coverage: cpu estimated$/m);
  });
});
