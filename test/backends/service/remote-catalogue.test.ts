import assert from 'node:assert/strict';
import { chmodSync, cpSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { parseRemoteDescription, remoteFeeds } from '../../../src/backends/service/remote-catalogue.js';
import { Units } from '../../../src/platform/signal-info.js';
import { runCli } from '../../helpers/cli.js';
import { needsDaemon, whenMet } from '../../helpers/requirements.js';
import { FIXTURES } from '../../helpers/tmp.js';
import { asUser, ensureUser } from '../../helpers/users.js';
import { ServiceHarness } from '../../service/harness.js';
import { INTEL, putMsr } from '../msr/helpers.js';

// A real joulegated on a private bus over a node with MSR files, RAPL powercap, /proc/stat and
// /proc/cpuinfo: an unprivileged user's `sensors --all` (through the daemon) must give each signal
// the device type root's direct backends give it.
const skip = needsDaemon();
const h = new ServiceHarness();
await whenMet(skip, async () => {
  await h.setup();
  cpSync(join(FIXTURES, 'server-2s4c2t'), h.sysroot, { recursive: true });
  cpSync(join(FIXTURES, 'energy/intel-2s/sys/class/powercap'), join(h.sysroot, 'sys/class/powercap'), {
    recursive: true,
  });
  for (let cpu = 0; cpu < 16; cpu++) {
    putMsr(h.sysroot, cpu, 0x10, 1000n + BigInt(cpu));
    putMsr(h.sysroot, cpu, 0x198, INTEL.PERF_STATUS);
    putMsr(h.sysroot, cpu, 0x606, INTEL.RAPL_POWER_UNIT);
    putMsr(h.sysroot, cpu, 0x611, INTEL.PKG_ENERGY_STATUS);
    putMsr(h.sysroot, cpu, 0x619, INTEL.DRAM_ENERGY_STATUS);
  }
  for (const zone of readdirSync(join(h.sysroot, 'sys/class/powercap')))
    if (zone !== 'intel-rapl') chmodSync(join(h.sysroot, 'sys/class/powercap', zone, 'energy_uj'), 0o400);
  chmodSync(h.sysroot, 0o755);
  chmodSync(dirname(h.runDir), 0o755);
  await h.startDaemon();
});
const user = whenMet(skip, () => ensureUser('jg-sensors'));

interface SensorRow {
  sensor: string;
  backend: string;
  device: string;
}
/** `sensors --all --json` as root (direct backends), or run under `user` (through the daemon). */
async function sensorsAll(user?: string[]): Promise<SensorRow[]> {
  const env = Object.entries({ ...h.env(), PATH: '/usr/bin:/bin' }).map(([k, v]) => `${k}=${v}`);
  const how = user ? { prefix: [...user, 'env', ...env] } : { env: h.env() };
  const r = await runCli(['sensors', '--all', '--json'], how);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { sensors: SensorRow[] }).sensors;
}

test('sensors --all through the daemon: each signal has the device type root gets directly', {
  skip,
}, async () => {
  const all = await runCli(['access', '-a'], { env: h.env() });
  assert.equal(all.code, 0, all.stderr);
  const grant = await runCli(['access', '-w', '-u'], { env: h.env(), input: all.stdout });
  assert.equal(grant.code, 0, grant.stderr);
  const direct = new Map((await sensorsAll()).map((r) => [r.sensor, r.device]));
  const viaDaemon = (await sensorsAll(asUser(user))).filter((r) => r.backend === 'service');
  const compared = new Map<string, string>();
  for (const { sensor, device } of viaDaemon) {
    const own = sensor.replace(/^SERVICE::/, '');
    const expected = direct.get(own);
    if (expected === undefined) continue; // an alias (SERVICE::CPU_ENERGY): root lists none
    assert.equal(device, expected, `${sensor}: ${device} through the daemon, ${expected} directly`);
    compared.set(own, device);
  }
  // The names only a backend's own links classify, and one of each source, were compared.
  const expectedDevices = {
    'MSR::DRAM_ENERGY_STATUS#-package-0': 'ram',
    'MSR::DRAM_ENERGY_STATUS:ENERGY-package-1': 'ram',
    'MSR::PKG_ENERGY_STATUS:ENERGY-package-0': 'cpu',
    'CPUINFO::FAMILY': 'cpu',
    'CPUINFO::FREQ_MIN': 'cpu',
    'PROCFS::CPU_UTILIZATION_TOTAL': 'cpu',
    'PROCFS::MEMORY_USED': 'ram',
    'POWERCAP::DRAM_ENERGY-package-0': 'ram',
  };
  for (const [sensor, device] of Object.entries(expectedDevices))
    assert.equal(compared.get(sensor), device, sensor);
  assert.ok(compared.size > 100, `${compared.size} sensors compared`);
});

test("the links of GEOPM's description (no feeds line, as geopmd sends) give aliased names their row", () => {
  const text = (iogroup: string, aliasFor?: string) =>
    `    description: x\n    units: joules\n    aggregation: sum\n    domain: package\n    iogroup: ${iogroup}\n` +
    (aliasFor ? `    alias_for: ${aliasFor}\n` : '');
  const parsed = parseRemoteDescription(text('MSR', 'MSR::DRAM_ENERGY_STATUS:ENERGY'));
  assert.deepEqual(parsed, {
    description: 'x',
    units: Units.Joules,
    links: { aliasFor: 'MSR::DRAM_ENERGY_STATUS:ENERGY' },
  });
  const links = new Map([
    ['DRAM_ENERGY', parsed.links],
    ['MSR::DRAM_ENERGY_STATUS:ENERGY', parseRemoteDescription(text('MSR')).links],
    ['MSR::PERF_STATUS:FREQ', {}],
    ['RAW_THING', parseRemoteDescription(`${text('X')}    feeds: CPU_ENERGY\n`).links],
    ['ODD', parseRemoteDescription('free text, no fields').links],
  ]);
  assert.deepEqual(
    remoteFeeds(links),
    new Map([
      ['MSR::DRAM_ENERGY_STATUS:ENERGY', 'DRAM_ENERGY'],
      ['RAW_THING', 'CPU_ENERGY'],
    ]),
  );
});
