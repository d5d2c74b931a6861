import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { run } from '../../helpers/cli.js';
import { needsTestUsers } from '../../helpers/requirements.js';
import { copyFixture } from '../../helpers/tmp.js';
import { asUser, ensureUser } from '../../helpers/users.js';

const skip = needsTestUsers();

// Real permissions, real unprivileged user: policy3's scaling_max_freq is made root-only (as
// cpuinfo_cur_freq is on real kernels) and every policy file is root-owned 0644, so the user
// can read the others but write none.
const LOAD = new URL('../../../dist/backends/load.js', import.meta.url).pathname;
const DOMAINS = new URL('../../../dist/platform/domains.js', import.meta.url).pathname;

test('CPUFREQ says which files a user cannot read or write, and never reads them as 0', {
  skip,
}, async () => {
  const root = copyFixture('server-2s4c2t');
  chmodSync(root, 0o755);
  chmodSync(join(root, 'sys/devices/system/cpu/cpufreq/policy3/scaling_max_freq'), 0o600);
  const script = `import { loadPlatform } from '${LOAD}';
import { DomainType } from '${DOMAINS}';
const pio = await loadPlatform({ include: (n) => n === 'CPUFREQ' });
const out = { diagnostics: pio.diagnostics() };
const h3 = pio.pushSignal('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 3);
const h4 = pio.pushSignal('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 4);
await pio.readBatch();
out.batch = [String(pio.sample(h3)), pio.sample(h4)];
out.read = await pio.readSignal('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 11).catch((e) => e.message);
out.write = await pio.writeControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 4, 2e9).catch((e) => e.message);
console.log(JSON.stringify(out));`;
  const user = ensureUser('joulegate-cpufreq');
  const r = await run(
    'env',
    [`JOULEGATE_SYSROOT=${root}`, process.execPath, '--input-type=module', '-e', script],
    {
      prefix: asUser(user),
    },
  );
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(out.diagnostics, [
    {
      backend: 'CPUFREQ',
      signal: 'CPUFREQ::SCALING_MAX_FREQ',
      reason: '/sys/devices/system/cpu/cpufreq/policy3/scaling_max_freq: permission denied',
    },
  ]);
  assert.deepEqual(out.batch, ['NaN', 3.7e9]);
  assert.equal(out.read, '/sys/devices/system/cpu/cpufreq/policy3/scaling_max_freq: permission denied');
  assert.equal(
    out.write,
    'CPUFREQ: /sys/devices/system/cpu/cpufreq/policy4/scaling_max_freq: permission denied',
  );
});
