import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { JobEnergyReport } from '../../../src/cluster/job-report/job-energy.js';
import { CLI, run, runCli } from '../../helpers/cli.js';
import { raplApp } from '../../helpers/rapl-app.js';
import { needsRoot } from '../../helpers/requirements.js';
import { copyFixture, tempDir } from '../../helpers/tmp.js';

const netns = needsRoot('runs the monitor in a network namespace of its own (unshare)');

// The second multi-node path: `srun joulegate monitor -- app` writes one report per node and
// job-report combines them. Each "node" here is `joulegate monitor` on its own fixture sysroot
// (the monitor takes the node's name from the sysroot's /etc/hostname), with an app that adds
// known joules to the RAPL counters.
async function monitorOn(node: string, out: string, joules: [number, number]): Promise<void> {
  const root = copyFixture('energy/amd-epyc');
  mkdirSync(join(root, 'etc'));
  writeFileSync(join(root, 'etc/hostname'), `${node}\n`);
  const app = raplApp(tempDir(), root, [
    { zone: 'intel-rapl:0', joules: joules[0] / 10 },
    { zone: 'intel-rapl:1', joules: joules[1] / 10 },
  ]);
  const monitor = [
    CLI,
    'monitor',
    '--format',
    'json',
    '--data-out',
    out,
    '--run-id',
    '77',
    '--',
    process.execPath,
    app,
  ];
  const r = await run(
    'unshare',
    ['--uts', 'sh', '-c', `hostname ${node} && exec "$0" "$@"`, process.execPath, ...monitor],
    {
      env: { JOULEGATE_SYSROOT: root },
    },
  );
  assert.equal(r.code, 0, r.stderr);
}

test('job-report combines per-node monitor reports; a node without a report is a gap, not zero', {
  skip: netns,
}, async () => {
  const out = tempDir();
  await monitorOn('node1', out, [10, 20]);
  await monitorOn('node2', out, [5, 7]);
  writeFileSync(join(out, 'notes.json'), '{"not": "a report"}\n');
  const r = await runCli([
    'job-report',
    '--reports',
    out,
    '--nodes',
    'node[1-3]',
    '--format',
    'json',
    '--price-factor',
    '0.5',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as JobEnergyReport;
  const node = (n: string) => report.nodes.find((x) => x.node === n)!;
  assert.ok(Math.abs(node('node1').joules - 30) < 1e-5, `node1 ${node('node1').joules} J`);
  assert.ok(Math.abs(node('node2').joules - 12) < 1e-5, `node2 ${node('node2').joules} J`);
  assert.deepEqual(
    node('node1').devices.map((d) => [d.kind, d.index, Math.round(d.joules * 1e5) / 1e5]),
    [
      ['package', '0', 10],
      ['package', '1', 20],
    ],
  );
  assert.equal(node('node1').coverage, 100);
  assert.equal(node('node3').joules, null);
  assert.ok(Math.abs(report.energy - 42) < 1e-5);
  assert.equal(report.complete, false);
  assert.deepEqual(report.gaps, [
    'node3: no energy data for the window (node down, not scraped or no report)',
  ]);
  assert.ok(Math.abs(report.money - (42 / 3.6e6) * 0.5) < 1e-12);

  // The same node twice (two monitors on one node) is counted once, and said.
  const first = readdirSync(out).find((f) => f.endsWith('_77.json'))!;
  copyFileSync(join(out, first), join(out, `copy-${first}`));
  const twice = await runCli(['job-report', '--reports', out, '--format', 'text']);
  assert.equal(twice.code, 0, twice.stderr);
  assert.match(twice.stdout, /two reports .* else the longest run, is used, not both/);
  assert.match(twice.stdout, /Total: 42\.000 J \(incomplete/);
});

test('job-report wants exactly one source', async () => {
  const r = await runCli(['job-report', '--nodes', 'a', '--start', '0']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /give either --prometheus URL or --reports PATH/);
  const none = await runCli(['job-report', '--reports', tempDir()]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /--reports: no monitor JSON report in /);
});
