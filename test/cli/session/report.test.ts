import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  isoTimestamp,
  pythonFloat,
  reportCsv,
  reportYaml,
  SessionStats,
} from '../../../src/cli/session/report.js';

const wall = () => '2026-12-02T10:00:00.000000001+0000';

test('stats: count/first/last/min/max/mean/std skip NaN; std is the sample deviation', () => {
  const stats = new SessionStats(['A', 'B-cpu-1'], 'node7');
  stats.update(10, [1, Number.NaN], wall);
  stats.update(10.5, [3, 4], wall);
  stats.update(11.1, [2, 6], wall);
  const r = stats.report();
  assert.equal(r.host, 'node7');
  assert.equal(r.sampleTimeFirst, wall());
  assert.equal(r.sampleCount, 3);
  assert.ok(Math.abs(r.sampleTimeTotal - 1.1) < 1e-12);
  assert.ok(Math.abs(r.samplePeriodMean - 0.55) < 1e-12);
  // periods 0.5 and 0.6 → sample std sqrt(0.005)
  assert.ok(Math.abs(r.samplePeriodStd - Math.sqrt(0.005)) < 1e-12);
  assert.deepEqual(r.metrics[0], { name: 'A', count: 3, first: 1, last: 2, min: 1, max: 3, mean: 2, std: 1 });
  const b = r.metrics[1]!;
  assert.equal(b.count, 2);
  assert.equal(b.first, 4);
  assert.equal(b.mean, 5);
  assert.ok(Math.abs(b.std - Math.SQRT2) < 1e-12);
});

test('stats: empty and single-sample reports follow GEOPM (period 0, std NaN), reset starts over', () => {
  const stats = new SessionStats(['A'], 'h');
  stats.update(5, [Number.NaN], wall);
  let r = stats.report();
  assert.equal(r.sampleCount, 1);
  assert.equal(r.samplePeriodMean, 0);
  assert.equal(r.samplePeriodStd, 0);
  assert.equal(r.metrics[0]!.count, 0);
  assert.ok(Number.isNaN(r.metrics[0]!.first));
  assert.ok(Number.isNaN(r.metrics[0]!.mean));
  stats.update(6, [7], wall);
  stats.reset();
  assert.equal(stats.updateCount, 0);
  stats.update(9, [8], wall);
  r = stats.report();
  assert.equal(r.sampleCount, 1);
  assert.equal(r.metrics[0]!.first, 8);
  assert.throws(() => stats.update(10, [1, 2], wall), RangeError);
});

test('ISO timestamp has nanoseconds and a numeric offset', () => {
  const ns = 1_723_684_438_545_153_099n; // 2024-08-15T01:13:58.545153099Z
  assert.equal(isoTimestamp(ns, 0), '2024-08-15T01:13:58.545153099+0000');
  assert.equal(isoTimestamp(ns, -420), '2024-08-14T18:13:58.545153099-0700');
  assert.equal(isoTimestamp(ns, 330), '2024-08-15T06:43:58.545153099+0530');
});

test('Python float repr (CSV report values)', () => {
  const cases: [number, string][] = [
    [2.0, '2.0'],
    [0, '0.0'],
    [-0, '-0.0'],
    [0.1, '0.1'],
    [10.001955031000001, '10.001955031000001'],
    [850000000, '850000000.0'],
    [1e-5, '1e-05'],
    [0.0001, '0.0001'],
    [8.698831894196923e-5, '8.698831894196923e-05'],
    [1e16, '1e+16'],
    [1234567890123456, '1234567890123456.0'],
    [1.5e300, '1.5e+300'],
    [Number.NaN, 'nan'],
    [Number.POSITIVE_INFINITY, 'inf'],
  ];
  for (const [v, s] of cases) assert.equal(pythonFloat(v), s, String(v));
});

function sampleReport() {
  const stats = new SessionStats(['TIME', 'CPU_POWER-package-0'], 'node7');
  stats.update(0, [0.0825453, Number.NaN], wall);
  stats.update(1, [1.0825453, 71.9161], wall);
  stats.update(2, [2.0825453, 54.9997], wall);
  return stats.report();
}

test('YAML report: keys in GEOPM order, values as C++ streams print doubles', () => {
  assert.equal(
    reportYaml(sampleReport()),
    [
      'host: "node7"',
      `sample-time-first: "${wall()}"`,
      'sample-time-total: 2',
      'sample-count: 3',
      'sample-period-mean: 1',
      'sample-period-std: 0',
      'metrics:',
      '  TIME:',
      '    count: 3',
      '    first: 0.0825453',
      '    last: 2.08255',
      '    min: 0.0825453',
      '    max: 2.08255',
      '    mean: 1.08255',
      '    std: 1',
      '  CPU_POWER-package-0:',
      '    count: 2',
      '    first: 71.9161',
      '    last: 54.9997',
      '    min: 54.9997',
      '    max: 71.9161',
      '    mean: 63.4579',
      '    std: 11.9617',
      '',
    ].join('\n'),
  );
});

test('CSV report: quoted header once, metrics sorted by name, Python number repr', () => {
  const text = reportCsv(sampleReport(), ',', true);
  const [header, data, end] = text.split('\n');
  assert.equal(end, '');
  const cols = header!.split(',');
  assert.deepEqual(cols.slice(0, 8), [
    '"host"',
    '"sample-time-first"',
    '"sample-time-total"',
    '"sample-count"',
    '"sample-period-mean"',
    '"sample-period-std"',
    '"CPU_POWER-package-0-count"',
    '"CPU_POWER-package-0-first"',
  ]);
  assert.equal(cols.length, 6 + 2 * 7);
  assert.equal(cols[13], '"TIME-count"');
  const values = data!.split(',');
  assert.deepEqual(values.slice(0, 8), ['"node7"', `"${wall()}"`, '2.0', '3', '1.0', '0.0', '2', '71.9161']);
  assert.equal(values[13], '3');
  assert.equal(values[14], '0.0825453');
  assert.equal(reportCsv(sampleReport(), ';', false).split('\n').length, 2);
  assert.ok(reportCsv(sampleReport(), ';', false).startsWith('"node7";'));
});
