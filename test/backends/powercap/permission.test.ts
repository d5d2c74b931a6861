import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CLI, run } from '../../helpers/cli.js';
import { needsTestUsers } from '../../helpers/requirements.js';
import { copyFixture } from '../../helpers/tmp.js';
import { asUser, ensureUser } from '../../helpers/users.js';

const skip = needsTestUsers();

// Since Linux 5.10 energy_uj is mode 0400 root. These tests make the fixture files look like
// that and run joulegate as a real unprivileged user: nothing is faked about the permission.
const REASON =
  /root-only since Linux 5\.10 \(CVE-2020-8694\); read it through joulegated with an access grant/;

function rootOnlyFixture(): string {
  const root = copyFixture('energy/intel-2s');
  chmodSync(root, 0o755);
  for (const zone of ['intel-rapl:0', 'intel-rapl:1'])
    chmodSync(join(root, 'sys/class/powercap', zone, 'energy_uj'), 0o400);
  return root;
}

function asTestUser(root: string, args: string[]) {
  const user = ensureUser('joulegate-energy');
  return run('env', [`JOULEGATE_SYSROOT=${root}`, process.execPath, ...args], { prefix: asUser(user) });
}

test('an unreadable energy_uj is explained in --info and as the reason a read fails', { skip }, async () => {
  const root = rootOnlyFixture();
  const info = await asTestUser(root, [CLI, 'read', '--info', 'CPU_ENERGY']);
  assert.equal(info.code, 0, info.stderr);
  assert.match(info.stdout, REASON);
  const read = await asTestUser(root, [CLI, 'read', 'CPU_ENERGY', 'package', '0']);
  assert.notEqual(read.code, 0);
  assert.match(read.stderr, REASON);
  assert.doesNotMatch(read.stdout, /^0\n/);
  // The zones this user may read still work.
  const dram = await asTestUser(root, [CLI, 'read', 'DRAM_ENERGY', 'package', '0']);
  assert.equal(dram.stdout, '45678.901234\n', dram.stderr);
});

test('diagnostics list the unreadable counters with the reason', { skip }, async () => {
  const root = rootOnlyFixture();
  const load = new URL('../../../dist/backends/load.js', import.meta.url).pathname;
  const script = `import { loadPlatform } from '${load}';
const pio = await loadPlatform({ include: (n) => n === 'POWERCAP' });
console.log(JSON.stringify(pio.diagnostics()));`;
  const r = await asTestUser(root, ['--input-type=module', '-e', script]);
  assert.equal(r.code, 0, r.stderr);
  const diags = JSON.parse(r.stdout) as { signal?: string; reason: string }[];
  const energy = diags.filter((d) => d.signal === 'POWERCAP::CPU_ENERGY');
  assert.equal(energy.length, 2, 'one entry per unreadable package zone');
  for (const d of energy) assert.match(d.reason, REASON);
  assert.ok(diags.some((d) => d.signal === 'POWERCAP::CPU_POWER' && REASON.test(d.reason)));
  assert.ok(!diags.some((d) => d.signal === 'POWERCAP::DRAM_ENERGY'));
});

test('an unreadable optional constraint file is a reason shown, and costs only its bound', {
  skip,
}, async () => {
  const root = copyFixture('energy/intel-2s');
  chmodSync(root, 0o755);
  chmodSync(join(root, 'sys/class/powercap/intel-rapl:0/constraint_0_max_power_uw'), 0o400);
  const sensors = await asTestUser(root, [CLI, 'sensors', '--all']);
  assert.equal(sensors.code, 0, sensors.stderr);
  assert.match(
    sensors.stdout,
    /intel-rapl:0\/constraint_0_max_power_uw: .*permission denied.*; the largest power limit is not known/i,
  );
  assert.match(sensors.stdout, /POWERCAP::CPU_ENERGY-package-0/, 'the zone stays');
  assert.match(sensors.stdout, /POWERCAP::CPU_POWER_LIMIT_MAX-package-1/, 'package 1 keeps its bound');
  assert.doesNotMatch(sensors.stdout, /POWERCAP::CPU_POWER_LIMIT_MAX-package-0/);
});
