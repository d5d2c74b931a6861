import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import type { AttributionReport } from '../../src/attribution/summary.js';
import { runCli } from '../helpers/cli.js';
import { onlyFile, PERUN_CHECK, python, readReport } from '../helpers/hdf5-reports.js';
import { needsH5py } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';

const h5py = needsH5py();

// The done-when test of issue 16 on this machine: a busy app and a sleeping process side by side
// under `monitor --attribute`, with the CPU energy estimated from this node's real /proc/stat
// (CI machines have no readable RAPL). The app spins in a child its shell kills and reaps, so its
// time reaches the app's tree through the shell's reaped-children counters.
const sleeper: ChildProcess = spawn('sleep', ['120'], { stdio: 'ignore' });
after(() => sleeper.kill('SIGKILL'));
const SLEEPER = `pid:${sleeper.pid}`;
const out = tempDir();
const SPIN = 'sh -c "while :; do :; done" & p=$!; sleep 1.5; kill $p; wait $p; exit 0';
const run = await runCli(
  [
    'monitor',
    '--attribute',
    '--pid',
    String(sleeper.pid),
    '--idle-power',
    '0.2',
    '--estimate-tdp',
    '100',
    '--sampling-period',
    '0.1',
    '--format',
    'json,text,csv,bench,html,hdf5',
    '--data-out',
    out,
    '--app-name',
    'spin',
    '--',
    'sh',
    '-c',
    SPIN,
  ],
  { cwd: out, timeoutMs: 120_000 },
);

const report = readReport(onlyFile(out, /\d\.json$/));
const attribution = report.attribution as AttributionReport;

describe('monitor --attribute: a busy app next to a sleeping process', () => {
  it('runs and reports the estimated CPU energy split', () => {
    assert.equal(run.code, 0, run.stderr);
    assert.equal(attribution.idleShare, 'none');
    assert.deepEqual(attribution.consumerIds, [SLEEPER]);
    assert.deepEqual(
      attribution.groups.map((g) => [g.group, g.method]),
      [['cpu', 'estimated']],
    );
  });

  it('the busy app gets ≥ 90 % of the dynamic energy of the two; the parts add up to the node', () => {
    const cpu = attribution.groups[0]!;
    assert.ok(cpu.app > 0, `app ${cpu.app} J`);
    const sleeping = cpu.consumers[0]!;
    assert.ok(cpu.app / (cpu.app + sleeping) >= 0.9, `app ${cpu.app} J, sleeper ${sleeping} J`);
    assert.equal(cpu.others, sleeping);
    // Each figure is one rounding of an exact µJ sum.
    const parts = cpu.app + cpu.others + cpu.unattributed + cpu.idle;
    assert.ok(
      Math.abs(parts - cpu.measured) < 1e-9 * Math.max(1, cpu.measured),
      `${parts} vs ${cpu.measured}`,
    );
    assert.ok(cpu.idle > 0, 'the idle model (0.2 W) kept a part apart');
    // A utilisation sample without a new clock tick is a missing interval, never most of the run.
    assert.ok(
      cpu.missingSeconds < report.rounds[0]!.metrics.host.runtime / 2,
      `${cpu.missingSeconds} s missing`,
    );
    // The node's figure is the report's own estimate of the CPU over the round.
    const estimated = report.rounds[0]!.metrics.host.estimatedEnergy;
    assert.ok(Math.abs(cpu.measured - estimated) < 1e-5, `${cpu.measured} vs ${estimated}`);
  });

  it('every format carries the section: text, html, csv, bench, and hdf5 back to the same figures', {
    skip: h5py,
  }, async () => {
    assert.match(run.stdout, /^Energy Attribution \(measured rounds\)$/m);
    assert.match(run.stdout, /^\| +cpu \(estimated\) \| +[\d.]+ m?J \| +[\d.]+ m?J \| +\d+\.\d % \|/m);
    assert.match(run.stdout, new RegExp(`^  ${SLEEPER}: cpu [\\d.]+ [mµ]?J \\(\\d+\\.\\d %\\)$`, 'm'));
    assert.match(readFileSync(onlyFile(out, /\.html$/), 'utf8'), /Energy Attribution/);
    const csv = readFileSync(onlyFile(out, /\.csv$/), 'utf8');
    const appRow = csv.split('\n').find((l) => l.includes(',attribution:app,'));
    assert.equal(appRow?.split(',').at(-1), String(attribution.groups[0]!.app));
    assert.ok(csv.includes(`,attribution:${SLEEPER},attributed,J,,`));
    const bench = JSON.parse(readFileSync(onlyFile(out, /\.bench\.json$/), 'utf8')) as { name: string }[];
    assert.ok(
      bench.some((e) => e.name === 'spin - APP_ENERGY'),
      JSON.stringify(bench.map((e) => e.name)),
    );
    const hdf5 = onlyFile(out, /\.hdf5$/);
    await python([PERUN_CHECK, hdf5], 'perun layout check');
    const back = tempDir();
    const exported = await runCli(['export', hdf5, 'json'], { cwd: back });
    assert.equal(exported.code, 0, exported.stderr);
    const file = exported.stdout.trim().split('\n').at(-1)!;
    assert.deepEqual(readReport(file).attribution, attribution);
  });

  it('the units table names the unit of every attribution figure', () => {
    for (const key of ['measured', 'app', 'consumers', 'others', 'unattributed', 'idle'])
      assert.equal(report.units!.fields[key], 'J', key);
    assert.equal(report.units!.fields.missingSeconds, 's');
  });
});

describe('monitor --attribute: bad consumers are one line before the app runs', () => {
  for (const [args, message] of [
    [['--pid', '0'], /--pid.*not a process id/],
    [['--pid', '2147483646'], /process 2147483646 does not exist/],
    [['--slurm-job', '12x'], /12x/],
    [['--idle-share', 'some'], /--idle-share.*Allowed choices are none, cpu-time, equal/],
    [['--idle-power', '-1'], /--idle-power.*watts/],
  ] as const) {
    it(args.join(' '), async () => {
      const dir = tempDir();
      const r = await runCli(['monitor', ...args, '--data-out', dir, '--', 'sh', '-c', 'echo ran'], {
        cwd: dir,
      });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.doesNotMatch(r.stdout, /ran/);
    });
  }
});
