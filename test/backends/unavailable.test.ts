import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import type { BackendRegistration } from '../../src/backends/registry.js';
import { requestFailure, whyUnavailable } from '../../src/backends/unavailable.js';
import { InvalidArgumentError } from '../../src/platform/errors.js';
import { PlatformIO } from '../../src/platform/platform-io.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { TableBackend } from '../../src/platform/table-backend.js';
import { loadTopology } from '../../src/platform/topology.js';
import { copyFixture, FIXTURES } from '../helpers/tmp.js';

const VM = join(FIXTURES, 'vm-1s4c');
const NO_MSR = 'MSR: no /dev/cpu/0/msr (load the msr or msr-safe kernel module)';

/** The VM fixture as every backend sees it: no RAPL, no msr, no cpufreq, no GPU driver. */
async function vm(): Promise<{ pio: PlatformIO; noRapl: string }> {
  const sysroot = new Sysroot(VM);
  const pio = await loadPlatform({ sysroot });
  return { pio, noRapl: `POWERCAP: no RAPL zones under ${sysroot.path('/sys/class/powercap')}` };
}

test('a RAPL name on a VM: each backend that would serve it says why, the preferred one first', async () => {
  const { pio, noRapl } = await vm();
  assert.equal(
    whyUnavailable(pio, 'signal', 'CPU_ENERGY'),
    `CPU_ENERGY: not available: ${noRapl}; ${NO_MSR}`,
  );
  // A control is asked for as a control, and read as a signal: both explain it.
  for (const kind of ['control', 'signal'] as const) {
    assert.equal(
      whyUnavailable(pio, kind, 'CPU_POWER_LIMIT_CONTROL'),
      `CPU_POWER_LIMIT_CONTROL: not available: ${noRapl}; ${NO_MSR}`,
    );
  }
  // A backend's own names are explained by its load failure; GPU names by both vendors'.
  assert.equal(
    whyUnavailable(pio, 'signal', 'POWERCAP::CPU_ENERGY'),
    `POWERCAP::CPU_ENERGY: not available: ${noRapl}`,
  );
  assert.match(
    whyUnavailable(pio, 'signal', 'GPU_ENERGY')!,
    /^GPU_ENERGY: not available: AMDSMI: no amdgpu driver loaded .*; NVML: no NVIDIA driver loaded /,
  );
  await pio.close();
});

test("nothing known explains a typo, or a signal asked for as a control: the caller keeps GEOPM's text", async () => {
  const { pio } = await vm();
  assert.equal(whyUnavailable(pio, 'signal', 'NO_SUCH_SIGNAL'), undefined);
  assert.equal(whyUnavailable(pio, 'control', 'CPU_ENERGY'), undefined);
  assert.equal(whyUnavailable(pio, 'control', 'TIME'), undefined);
  const err = new InvalidArgumentError('no support for signal NO_SUCH_SIGNAL');
  assert.equal(requestFailure(pio, 'signal', 'NO_SUCH_SIGNAL', err), err.message);
  await pio.close();
});

test('a name the node serves keeps the failure of the request itself', async () => {
  const { pio, noRapl } = await vm();
  const refused = new InvalidArgumentError('domain index 9 out of range for package (1 index)');
  assert.equal(requestFailure(pio, 'signal', 'TIME', refused), refused.message);
  assert.equal(
    requestFailure(pio, 'signal', 'CPU_ENERGY', new InvalidArgumentError('no support for signal CPU_ENERGY')),
    `CPU_ENERGY: not available: ${noRapl}; ${NO_MSR}`,
  );
  await pio.close();
});

test('a loaded backend: a constant this node does not state, or hardware it lacks', async () => {
  const { pio } = await vm();
  // CPUINFO loaded but left the sticker frequency out: its reason, by alias and by full name.
  const sticker = 'CPUINFO: the model name has no "@ x GHz" and cpufreq has no base_frequency';
  assert.equal(
    whyUnavailable(pio, 'signal', 'CPU_FREQUENCY_STICKER'),
    `CPU_FREQUENCY_STICKER: not available: ${sticker}`,
  );
  assert.equal(
    whyUnavailable(pio, 'signal', 'CPUINFO::FREQ_STICKER'),
    `CPUINFO::FREQ_STICKER: not available: ${sticker}`,
  );
  // A constant is never a control: writing it keeps GEOPM's text.
  assert.equal(whyUnavailable(pio, 'control', 'CPU_FREQUENCY_STICKER'), undefined);
  await pio.close();
  // The AMD node has package RAPL zones but no DRAM zone.
  const amd = await loadPlatform({
    sysroot: new Sysroot(copyFixture('energy/amd-epyc')),
    include: (n) => n === 'POWERCAP',
  });
  assert.equal(
    whyUnavailable(amd, 'signal', 'DRAM_ENERGY'),
    "DRAM_ENERGY: not available: POWERCAP: loaded, but this node's hardware does not provide it",
  );
  // A loaded backend's own prefix is no claim: POWERCAP::NO_SUCH is a typo, not missing hardware.
  assert.equal(whyUnavailable(amd, 'signal', 'POWERCAP::NO_SUCH'), undefined);
  await amd.close();
});

test('a catalogue quantity served under a backend name only says which name to read', async () => {
  const { pio } = await vm();
  assert.equal(
    whyUnavailable(pio, 'signal', 'MEMORY_USED'),
    'MEMORY_USED: not available under this name here; read PROCFS::MEMORY_USED',
  );
  await pio.close();
});

test('a reason over several lines is given as one', () => {
  const pio = new PlatformIO(loadTopology(new Sysroot(VM)));
  pio.recordMissing({ backend: 'SENSORBOARD', reason: 'bus error\n   on i2c-3\n' });
  const registration: BackendRegistration = {
    name: 'SENSORBOARD',
    order: 70,
    description: 'test board sensors',
    offers: () => ({ signals: ['BOARD_ENERGY'] }),
    create: () => {
      throw new Error('not made in this test');
    },
  };
  assert.equal(
    whyUnavailable(pio, 'signal', 'BOARD_ENERGY', [registration]),
    'BOARD_ENERGY: not available: SENSORBOARD: bus error on i2c-3',
  );
});

/** A plugin's backend whose rack PDU did not answer at setup: it leaves RACK_POWER out, saying why. */
class RackBackend extends TableBackend<null> {
  readonly id = 'rack';
  readonly name = 'RACK';
  readonly description = 'rack PDU power (test plugin)';
  protected snapshot(): null {
    return null;
  }
  protected define() {
    this.omitSignal('PDU_POWER', ['RACK_POWER'], 'PDU 10.0.0.5 did not answer SNMP');
    return { signals: [] };
  }
}

test('a plugin backend, which has no registration, explains the names it left out', async () => {
  const sysroot = new Sysroot(VM);
  const topology = loadTopology(sysroot);
  const pio = new PlatformIO(topology);
  const rack = new RackBackend();
  await rack.setup({ sysroot, topology });
  pio.register(rack);
  assert.equal(
    whyUnavailable(pio, 'signal', 'RACK_POWER', []),
    'RACK_POWER: not available: RACK: PDU 10.0.0.5 did not answer SNMP',
  );
  assert.equal(
    whyUnavailable(pio, 'signal', 'RACK::PDU_POWER', []),
    'RACK::PDU_POWER: not available: RACK: PDU 10.0.0.5 did not answer SNMP',
  );
  assert.equal(whyUnavailable(pio, 'signal', 'RACK::OTHER', []), undefined);
});
