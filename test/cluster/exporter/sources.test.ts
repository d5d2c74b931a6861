import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadPlatform } from '../../../src/backends/load.js';
import { boundedReason, REASON_MAX, sourceStatus } from '../../../src/cluster/exporter/sources.js';
import { Sysroot } from '../../../src/platform/sysroot.js';
import { FIXTURES } from '../../helpers/tmp.js';

test('every backend tried is a source: loaded ones available, the others with why, by name', async () => {
  const sysroot = new Sysroot(join(FIXTURES, 'vm-1s4c'));
  const pio = await loadPlatform({ sysroot });
  const status = sourceStatus(pio);
  assert.deepEqual(
    status.map((s) => s.source),
    ['AMDSMI', 'CPUFREQ', 'CPUINFO', 'HWMON', 'MSR', 'NVML', 'POWERCAP', 'PROCFS', 'TIME'],
  );
  assert.deepEqual(
    status.find((s) => s.source === 'POWERCAP'),
    {
      source: 'POWERCAP',
      available: false,
      reason: `no RAPL zones under ${sysroot.path('/sys/class/powercap')}`,
    },
  );
  // CPUINFO loaded but left a constant out: still available (its signal diagnostics are no load failure).
  assert.deepEqual(
    status.find((s) => s.source === 'CPUINFO'),
    { source: 'CPUINFO', available: true },
  );
  await pio.close();
});

test('a reason is one line of at most REASON_MAX characters', () => {
  assert.equal(boundedReason('  no device\n\tat  /dev/x \n'), 'no device at /dev/x');
  const long = `library error: ${'x'.repeat(400)}`;
  const cut = boundedReason(long);
  assert.equal(cut.length, REASON_MAX);
  assert.ok(cut.startsWith('library error: xxx') && cut.endsWith('…'), cut);
  const exact = 'y'.repeat(REASON_MAX);
  assert.equal(boundedReason(exact), exact);
});
