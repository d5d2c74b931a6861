import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../../helpers/cli.js';
import { needsAdmin } from '../../helpers/requirements.js';
import { FIXTURES } from '../../helpers/tmp.js';

const admin = needsAdmin();

const DOMAIN_NAMES = [
  'board',
  'package',
  'core',
  'cpu',
  'memory',
  'package_integrated_memory',
  'nic',
  'package_integrated_nic',
  'gpu',
  'package_integrated_gpu',
  'gpu_chip',
];

/** Each case fails with exactly this stderr, EINVAL and nothing on stdout. */
async function expectEinval(command: string, cases: [string[], string][]): Promise<void> {
  for (const [args, stderr] of cases) {
    const r = await runCli([command, ...args]);
    assert.equal(r.stderr, stderr, args.join(' '));
    assert.equal(r.code, 22, args.join(' '));
    assert.equal(r.stdout, '', args.join(' '));
  }
}

test('read with no arguments lists signal names, sorted, one per line', async () => {
  const r = await runCli(['read']);
  assert.equal(r.code, 0, r.stderr);
  const names = r.stdout.trimEnd().split('\n');
  assert.ok(names.includes('TIME') && names.includes('TIME::ELAPSED'), r.stdout);
  assert.deepEqual(names, [...names].sort());
  assert.equal(new Set(names).size, names.length);
});

test('read TIME board 0 prints the elapsed time as %.16g', { skip: admin }, async () => {
  const r = await runCli(['read', 'TIME', 'board', '0']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^\d+(\.\d+)?(e-\d+)?\n$/);
  const value = Number(r.stdout);
  assert.ok(value > 0 && value < 60, r.stdout);
  assert.equal(r.stderr, '');
});

test('TIME is native to cpu and readable at every domain, as GEOPM', async () => {
  for (const [domain, idx] of [
    ['cpu', '1'],
    ['core', '0'],
    ['package', '0'],
    ['board', '0'],
  ]) {
    const r = await runCli(['read', 'TIME', domain!, idx!]);
    assert.equal(r.code, 0, `${domain}: ${r.stderr}`);
    const value = Number(r.stdout);
    assert.ok(value > 0 && value < 60, `${domain}: ${r.stdout}`);
  }
});

test('read --domain: every domain name in 28 columns, then its count', async () => {
  for (const flag of ['--domain', '-d']) {
    const r = await runCli(['read', flag]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.deepEqual(
      lines.map((l) => l.slice(0, 28).trimEnd()),
      DOMAIN_NAMES,
    );
    for (const line of lines) assert.match(line.slice(28), /^\d+$/);
    assert.equal(lines[0], `${'board'.padEnd(28)}1`);
  }
});

test('read --info NAME prints the description block; --info-all describes every signal', async () => {
  const r = await runCli(['read', '--info', 'TIME']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    'TIME:\n    description: Time elapsed since the daemon started (read through the service) or ' +
      'this program loaded TIME (monotonic clock)\n' +
      '    units: seconds\n    aggregation: select_first\n    domain: cpu\n    iogroup: TIME\n' +
      '    alias_for: TIME::ELAPSED\n',
  );
  const short = await runCli(['read', '-i', 'TIME']);
  assert.equal(short.stdout, r.stdout);
  const all = await runCli(['read', '-I']);
  assert.equal(all.code, 0, all.stderr);
  const listed = (await runCli(['read'])).stdout.trimEnd().split('\n');
  const described = all.stdout
    .split('\n')
    .filter((l) => /^\S.*:$/.test(l))
    .map((l) => l.slice(0, -1));
  assert.deepEqual(described, listed);
});

test('read --cache and write --cache are accepted and do nothing', async () => {
  for (const cmd of ['read', 'write']) {
    const r = await runCli([cmd, '--cache']);
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', '']);
  }
});

test('read: geopmread error texts, EINVAL exit status, no stack traces', { skip: admin }, async () => {
  const cases: [string[], string][] = [
    [['TIME', 'board', 'x'], 'Error: invalid domain index.\n\n'],
    [['TIME', 'board', '1abc'], 'Error: invalid domain index.\n\n'],
    [['TIME', 'board', '1'], 'Error: cannot read signal: domain index 1 out of range for board (1 index)\n'],
    [
      ['TIME', 'board', '-1'],
      'Error: cannot read signal: domain index -1 out of range for board (1 index)\n',
    ],
    [['TIME', 'socket', '0'], 'Error: cannot read signal: unrecognized domain name: "socket"\n'],
    [['NO_SUCH_SIGNAL', 'board', '0'], 'Error: cannot read signal: no support for signal NO_SUCH_SIGNAL\n'],
    [['TIME', 'board'], 'Error: domain type and domain index are required to read signal.\n\n'],
    [['TIME'], 'Error: domain type and domain index are required to read signal.\n\n'],
    [['--info'], 'Error: no signal requested.\n'],
    [['--info', 'NO_SUCH_SIGNAL'], 'Error: no support for signal NO_SUCH_SIGNAL\n'],
    [['--info', '--domain'], 'Error: info about domain not implemented.\n'],
  ];
  await expectEinval('read', cases);
  const unknown = await runCli(['read', '--bogus']);
  assert.equal(unknown.code, 22);
  assert.match(unknown.stderr, /^error: unknown option '--bogus'\n$/);
});

test('write: geopmwrite error texts and EINVAL exit status', { skip: admin }, async () => {
  const cases: [string[], string][] = [
    [['SOME_CONTROL', 'board', 'x', '1'], 'Error: invalid domain index.\n\n'],
    [['SOME_CONTROL', 'board', '0', 'abc'], 'Error: invalid write value.\n\n'],
    [['SOME_CONTROL', 'board', '0', '2GHz'], 'Error: invalid write value.\n\n'],
    [
      ['SOME_CONTROL', 'board', '0'],
      'Error: domain type, domain index, and value are required to write control.\n\n',
    ],
    [
      ['NO_SUCH_CONTROL', 'board', '0', '1'],
      'Error: cannot write control: no support for control NO_SUCH_CONTROL\n',
    ],
    [
      ['NO_SUCH_CONTROL', 'socket', '0', '1'],
      'Error: cannot write control: unrecognized domain name: "socket"\n',
    ],
    // TIME is a signal, not a control: writing it must fail, not pretend.
    [['TIME', 'board', '0', '1'], 'Error: cannot write control: no support for control TIME\n'],
    [['--info'], 'Error: no control requested.\n'],
    [['--info', 'TIME'], 'Error: no support for control TIME\n'],
    [['-i', '-d'], 'Error: info about domain not implemented.\n'],
  ];
  await expectEinval('write', cases);
});

test('write lists control names and --domain like read', async () => {
  const r = await runCli(['write']);
  assert.equal(r.code, 0, r.stderr);
  const names = r.stdout === '' ? [] : r.stdout.trimEnd().split('\n');
  assert.deepEqual(names, [...names].sort());
  assert.ok(!names.includes('TIME'));
  const d = await runCli(['write', '-d']);
  assert.equal(d.stdout, (await runCli(['read', '-d'])).stdout);
});

test('a node without RAPL, msr or cpufreq: read and write say why, on one line, EINVAL', {
  skip: admin,
}, async () => {
  const vm = join(FIXTURES, 'vm-1s4c');
  const env = { JOULEGATE_SYSROOT: vm };
  const noRapl = `POWERCAP: no RAPL zones under ${vm}/sys/class/powercap`;
  const noMsr = 'MSR: no /dev/cpu/0/msr (load the msr or msr-safe kernel module)';
  const noCpufreq =
    'CPUFREQ: no cpufreq policies under /sys/devices/system/cpu/cpufreq nor /sys/devices/system/cpu/cpu*/cpufreq (VM without a cpufreq driver?)';
  const cases: [string, string[], string][] = [
    ['read', ['--info', 'CPU_ENERGY'], `Error: CPU_ENERGY: not available: ${noRapl}; ${noMsr}\n`],
    [
      'read',
      ['CPU_ENERGY', 'package', '0'],
      `Error: cannot read signal: CPU_ENERGY: not available: ${noRapl}; ${noMsr}\n`,
    ],
    [
      'write',
      ['--info', 'CPU_POWER_LIMIT_CONTROL'],
      `Error: CPU_POWER_LIMIT_CONTROL: not available: ${noRapl}; ${noMsr}\n`,
    ],
    [
      'write',
      ['CPU_FREQUENCY_MAX_CONTROL', 'package', '0', '2.0e9'],
      `Error: cannot write control: CPU_FREQUENCY_MAX_CONTROL: not available: ${noMsr}; ${noCpufreq}\n`,
    ],
    // Names nothing explains keep geopmread's and geopmwrite's texts there too.
    ['read', ['--info', 'NO_SUCH_SIGNAL'], 'Error: no support for signal NO_SUCH_SIGNAL\n'],
    [
      'write',
      ['CPU_ENERGY', 'package', '0', '1'],
      'Error: cannot write control: no support for control CPU_ENERGY\n',
    ],
  ];
  for (const [command, args, stderr] of cases) {
    const r = await runCli([command, ...args], { env });
    assert.equal(r.stderr, stderr, `${command} ${args.join(' ')}`);
    assert.equal(r.code, 22, `${command} ${args.join(' ')}`);
    assert.equal(r.stdout, '');
  }
});
