import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatTopology } from '../../../src/cli/commands/topo.js';
import { parseCpuList } from '../../../src/platform/sysroot.js';
import { Topology } from '../../../src/platform/topology.js';
import { runCli } from '../../helpers/cli.js';
import { needsAdmin } from '../../helpers/requirements.js';
import { copyFixture } from '../../helpers/tmp.js';

const admin = needsAdmin();

/** Fixture (b): 2 packages × 4 cores × 2 threads, interleaved numbering, one cpufreq policy per core. */
const SERVER = 'server-2s4c2t';
const PKG0 = [0, 2, 4, 6, 8, 10, 12, 14];
const PKG1 = [1, 3, 5, 7, 9, 11, 13, 15];

function maxFreqs(root: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (let p = 0; p < 8; p++) {
    out[`policy${p}`] = Number(
      readFileSync(join(root, `sys/devices/system/cpu/cpufreq/policy${p}/scaling_max_freq`), 'utf8'),
    );
  }
  return out;
}

test('topo on fixture (b): 2 packages, 8 cores, 16 cpus, 2 memory domains with their members', async () => {
  const root = copyFixture(SERVER);
  const r = await runCli(['topo'], { env: { JOULEGATE_SYSROOT: root } });
  assert.equal(r.code, 0, r.stderr);
  for (const line of [
    'package: 2',
    '  package 0: cpus 0,2,4,6,8,10,12,14',
    '  package 1: cpus 1,3,5,7,9,11,13,15',
    'core: 8',
    '  core 0: cpus 0,8',
    '  core 4: cpus 1,9',
    'cpu: 16',
    '  cpu 9: core 4, package 1, memory 1',
    'memory: 2',
    '  memory 0: cpus 0,2,4,6,8,10,12,14',
    '  memory 1: cpus 1,3,5,7,9,11,13,15',
    'gpu: 0',
  ]) {
    assert.ok(r.stdout.split('\n').includes(line), `missing "${line}" in\n${r.stdout}`);
  }

  const json = await runCli(['topo', '--json'], { env: { JOULEGATE_SYSROOT: root } });
  assert.equal(json.code, 0, json.stderr);
  const { domains } = JSON.parse(json.stdout);
  assert.equal(domains.board.count, 1);
  assert.deepEqual(domains.package, { count: 2, cpus: [PKG0, PKG1] });
  assert.equal(domains.core.count, 8);
  assert.deepEqual(domains.core.cpus[5], [3, 11]);
  assert.equal(domains.cpu.count, 16);
  assert.deepEqual(domains.memory, { count: 2, cpus: [PKG0, PKG1] });
  assert.equal(domains.gpu.count, 0);
});

test('topo text: CPU-less domains name their package; an unreadable sysroot is a one-line error', async () => {
  const topo = new Topology({
    cpus: [
      { cpu: 0, packageId: 0, coreId: 0 },
      { cpu: 1, packageId: 1, coreId: 0 },
    ],
    numa: [
      { node: 0, cpus: [0], distance: [10, 20, 30, 40] },
      { node: 1, cpus: [1], distance: [20, 10, 40, 30] },
      { node: 2, cpus: [], distance: [30, 40, 10, 50] },
      { node: 3, cpus: [], distance: [40, 30, 50, 10] },
    ],
  });
  const text = formatTopology(topo);
  assert.match(
    text,
    /\npackage_integrated_memory: 2\n {2}package_integrated_memory 0: in package 0\n {2}package_integrated_memory 1: in package 1\n/,
  );
  assert.match(text, /\n {2}cpu 1: core 1, package 1, memory 1\n/);

  const r = await runCli(['topo'], { env: { JOULEGATE_SYSROOT: '/nonexistent-sysroot' } });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /^Error: [^\n]+\n$/);
});

test('write CPU_FREQUENCY_MAX_CONTROL package 0 changes exactly package 0 policies; read gives it back', {
  skip: admin,
}, async () => {
  const root = copyFixture(SERVER);
  const env = { JOULEGATE_SYSROOT: root };
  const before = maxFreqs(root);
  const w = await runCli(['write', 'CPU_FREQUENCY_MAX_CONTROL', 'package', '0', '2.0e9'], { env });
  assert.deepEqual([w.code, w.stdout, w.stderr], [0, '', '']);
  const after = maxFreqs(root);
  // policy N covers cpus N and N+8; even policies are package 0's cores
  for (let p = 0; p < 8; p++) {
    assert.equal(after[`policy${p}`], p % 2 === 0 ? 2_000_000 : before[`policy${p}`], `policy${p}`);
  }
  const r0 = await runCli(['read', 'CPU_FREQUENCY_MAX_CONTROL', 'package', '0'], { env });
  assert.deepEqual([r0.code, r0.stdout], [0, '2000000000\n']);
  const r1 = await runCli(['read', 'CPU_FREQUENCY_MAX_CONTROL', 'package', '1'], { env });
  assert.equal(r1.stdout, `${before.policy1! * 1000}\n`);
});

test('write at core 5 touches only the policy of cpus 3 and 11; a rejected value changes nothing', {
  skip: admin,
}, async () => {
  const root = copyFixture(SERVER);
  const env = { JOULEGATE_SYSROOT: root };
  const before = maxFreqs(root);
  const w = await runCli(['write', 'CPU_FREQUENCY_MAX_CONTROL', 'core', '5', '1.5e9'], { env });
  assert.equal(w.code, 0, w.stderr);
  assert.deepEqual(maxFreqs(root), { ...before, policy3: 1_500_000 });

  const bad = await runCli(['write', 'CPU_FREQUENCY_MAX_CONTROL', 'package', '1', '-5'], { env });
  assert.equal(bad.code, 22);
  assert.match(bad.stderr, /^Error: cannot write control: [^\n]+\n$/);
  const out = await runCli(['write', 'CPU_FREQUENCY_MAX_CONTROL', 'package', '2', '2e9'], { env });
  assert.equal(out.code, 22);
  assert.match(out.stderr, /^Error: cannot write control: domain index 2 out of range for package/);
  assert.deepEqual(maxFreqs(root), { ...before, policy3: 1_500_000 });
});

async function utilizationSession(env: Record<string, string>, cpus: number) {
  const r = await runCli(['session', '-t', '1', '-p', '0.1'], {
    input: 'TIME board 0\nCPU_UTILIZATION cpu *\n',
    env,
  });
  assert.equal(r.code, 0, r.stderr);
  const [header, ...rows] = r.stdout.trimEnd().split('\n');
  const expected = ['"TIME"', ...Array.from({ length: cpus }, (_, c) => `"CPU_UTILIZATION-cpu-${c}"`)];
  assert.equal(header, expected.join(','));
  assert.equal(rows.length, 11);
  for (const row of rows) assert.equal(row.split(',').length, cpus + 1);
  return rows.map((row) => row.split(','));
}

test('session of CPU_UTILIZATION on this machine: TIME + one column per cpu, 11 rows', async () => {
  const online = parseCpuList(readFileSync('/sys/devices/system/cpu/online', 'utf8'));
  const rows = await utilizationSession({}, online.length);
  // after the first row every interval spans 0.1 s of /proc/stat ticks: a fraction in [0, 1]
  for (const row of rows.slice(1)) {
    for (const v of row.slice(1)) assert.ok(Number(v) >= 0 && Number(v) <= 1, row.join(','));
  }
});

test('session of CPU_UTILIZATION on fixture (b): 17 columns', async () => {
  await utilizationSession({ JOULEGATE_SYSROOT: copyFixture(SERVER) }, 16);
});
