import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import {
  ABSOLUTE_TOLERANCE_J,
  CHECK_SAMPLES,
  checkEnergyCounters,
  counterAgrees,
  PowerIntegrator,
  RELATIVE_TOLERANCE,
} from '../../../src/backends/amdsmi/energy-check.js';
import { loadPlatform } from '../../../src/backends/load.js';
import { DomainType } from '../../../src/platform/domains.js';
import { InvalidArgumentError, PermissionError } from '../../../src/platform/errors.js';
import type { PlatformIO } from '../../../src/platform/platform-io.js';
import {
  AMDSMI_LIB24,
  assertReads,
  deactivateFakes,
  type FakeBuild,
  FakeGpu,
  type FakeState,
  type ReadCase,
} from '../../helpers/fake-gpu.js';
import { needsCompiler } from '../../helpers/requirements.js';
import { tempDir } from '../../helpers/tmp.js';

const skip = needsCompiler();

const GPU = DomainType.Gpu;
const opened: PlatformIO[] = [];

async function platformWith(
  state: FakeState,
  build?: FakeBuild,
): Promise<{ pio: PlatformIO; fake: FakeGpu }> {
  deactivateFakes();
  const fake = new FakeGpu('amdsmi', state, build).activate();
  const pio = await loadPlatform({ include: (n) => n === 'AMDSMI' });
  opened.push(pio);
  return { pio, fake };
}

afterEach(async () => {
  for (const pio of opened.splice(0)) await pio.close();
  deactivateFakes();
});

/** CLOCK_MONOTONIC seconds, the clock the fake's counters advance with. */
const monotonic = () => Number(process.hrtime.bigint()) / 1e9;

type Meta = {
  libraryVersion: string;
  devices: { gpu: number; uuid: string; pciBusId: string; energySource: string; cpus: number[] }[];
};
const metadataOf = (pio: PlatformIO) =>
  pio
    .loadedBackends()
    .find((b) => b.name === 'AMDSMI')!
    .metadata() as Meta;

describe('AMD SMI backend through the fake libamd_smi', { skip }, () => {
  test('devices, metadata and every signal in SI units', async () => {
    const { pio, fake } = await platformWith({
      device_count: 2,
      '1.uuid': 'abcd-1',
      '1.numa_node': 0,
      // The fake fills amdsmi_bdf_t's bit fields; the FFI decodes the 64-bit word.
      '0.pci_domain': 0x12,
      '0.pci_bus': 0x3b,
      '0.pci_device': 0x1f,
      '0.pci_function': 5,
    });
    assert.equal(pio.topology.numDomain(GPU), 2);
    const meta = metadataOf(pio);
    assert.equal(meta.devices[1]!.uuid, 'abcd-1');
    assert.equal(meta.devices[0]!.pciBusId, '0012:3b:1f.5');
    assert.equal(meta.devices[1]!.pciBusId, '0000:c2:00.0');
    assert.deepEqual(meta.devices[1]!.cpus, pio.topology.numa.find((n) => n.node === 0)!.cpus);
    const table: ReadCase[] = [
      ['GPU_POWER', { '1.power_w': 275 }, 275],
      ['GPU_UTILIZATION', { '1.gfx_activity': 83 }, 0.83],
      ['AMDSMI::GPU_MEMORY_UTILIZATION', { '1.umc_activity': 12 }, 0.12],
      ['GPU_MEMORY_USED', { '1.vram_used': 4294967296 }, 4294967296],
      ['GPU_MEMORY_TOTAL', { '1.vram_total': 68702699520 }, 68702699520],
      ['GPU_CORE_FREQUENCY_STATUS', { '1.gfx_mhz': 1700 }, 1.7e9],
      ['GPU_MEMORY_FREQUENCY_STATUS', { '1.mem_mhz': 1200 }, 1.2e9],
      ['GPU_TEMPERATURE', { '1.edge_c': 51 }, 51],
      ['AMDSMI::GPU_HOTSPOT_TEMPERATURE', { '1.hotspot_c': 77 }, 77],
      ['GPU_POWER_LIMIT_MIN_AVAIL', { '1.cap_min_uw': 150000000 }, 150],
      ['GPU_POWER_LIMIT_MAX_AVAIL', { '1.cap_max_uw': 560000000 }, 560],
      ['GPU_POWER_LIMIT_DEFAULT', { '1.cap_default_uw': 500000000 }, 500],
      ['GPU_POWER_LIMIT_CONTROL', { '1.cap_uw': 420000000 }, 420],
    ];
    await assertReads(pio, fake, 1, table);
  });

  test('parts without an average power (MI300) report current socket power', async () => {
    const { pio } = await platformWith({ '0.power_w': 0xffffffff, '0.current_power_w': 550 });
    assert.equal(await pio.readSignal('GPU_POWER', GPU, 0), 550);
  });

  test('a counter that agrees with power is used: energy = accumulator × resolution', async () => {
    const { pio } = await platformWith({ '0.power_w': 300, '0.energy_uj': 7e6, '0.resolution_uj': 15.3 });
    assert.equal(metadataOf(pio).devices[0]!.energySource, 'counter');
    assert.match(pio.signalInfo('GPU_ENERGY').description, /source: counter/);
    const before = monotonic();
    const joules = await pio.readSignal('GPU_ENERGY', GPU, 0);
    const after = monotonic();
    // The fake's counter is 7 J + 300 W × monotonic time in 15.3 µJ steps; the resolution is a
    // C float (15.3 is not exact in binary), hence the 1e-7 relative slack.
    const slack = 1e-7 * joules;
    assert.ok(joules >= 7 + 300 * before - slack && joules <= 7 + 300 * after + slack, `${joules}`);
  });

  for (const [what, scale] of [
    ['frozen', 0],
    ['three times too fast', 3],
  ] as const) {
    test(`a ${what} counter is replaced by integrated power and marked so`, async () => {
      const { pio } = await platformWith({ '0.power_w': 200, '0.energy_scale': scale });
      const meta = metadataOf(pio);
      assert.equal(meta.devices[0]!.energySource, 'integrated');
      assert.match(pio.signalInfo('GPU_ENERGY').description, /source: integrated from socket power on gpu 0/);
      const h = pio.pushSignal('GPU_ENERGY', GPU, 0);
      const t0 = monotonic();
      await pio.readBatch();
      const t1 = monotonic();
      const e1 = pio.sample(h);
      await new Promise((r) => setTimeout(r, 200));
      const t2 = monotonic();
      await pio.readBatch();
      const t3 = monotonic();
      const delta = pio.sample(h) - e1;
      // Constant 200 W: the integral between the two reads lies between the inner and outer spans.
      assert.ok(delta >= 200 * (t2 - t1) - 1e-9 && delta <= 200 * (t3 - t0) + 1e-9, `ΔE = ${delta}`);
    });
  }

  test('the check integrates power with failed reads as gaps, never as 0 W', async () => {
    let reads = 0;
    // Device 0: 100 W, every second read fails. Device 1: power never readable.
    const [gappy, unreadable] = await checkEnergyCounters(
      [0, 1],
      {
        power: (d) => {
          if (d === 1) throw new Error('no power sensor');
          if (reads++ % 2 === 1) throw new Error('busy');
          return 100;
        },
        energyMicrojoules: () => 5e6,
      },
      0.02,
    );
    // One power read per sample, a failed one not retried: good reads alternate with failed
    // ones, no two adjacent, so nothing can be integrated.
    assert.equal(reads, CHECK_SAMPLES, 'power reads of device 0');
    assert.equal(gappy!.start.power, 100, 'the last good read starts the integrated counter');
    assert.ok(Number.isNaN(gappy!.check.integratedJoules), `${gappy!.check.integratedJoules} J`);
    assert.equal(gappy!.check.seconds, 0);
    assert.equal(gappy!.check.reason, 'power unreadable, counter used unchecked');
    assert.ok(Number.isNaN(unreadable!.start.power), 'no made-up start power');
    assert.equal(unreadable!.start.joules, 0);
  });

  test('the integrated counter spans a failed power read and reports that read as NaN', async () => {
    const power = [200, Number.NaN, 200];
    const t0 = performance.now() / 1000;
    const integrator = new PowerIntegrator(() => power.shift()!, { time: t0, power: 200, joules: 10 });
    const sleep = () => new Promise((r) => setTimeout(r, 20));
    await sleep();
    const e1 = integrator.advance();
    await sleep();
    assert.ok(Number.isNaN(integrator.advance()), 'a failed power read is a failed energy read');
    await sleep();
    const e3 = integrator.advance();
    const t3 = performance.now() / 1000;
    assert.ok(e1 > 10 && e3 > e1, `${e1} J then ${e3} J`);
    // Constant 200 W across the gap: the counter kept counting.
    assert.ok(e3 - 10 <= 200 * (t3 - t0) + 1e-9 && e3 - 10 >= 200 * 0.05, `${e3 - 10} J`);
  });

  test('the agreement rule', () => {
    assert.equal(counterAgrees(100, 100), true);
    assert.equal(counterAgrees(100 * (1 + RELATIVE_TOLERANCE), 100), true);
    assert.equal(counterAgrees(100 * (1 + RELATIVE_TOLERANCE) + 0.01, 100), false);
    assert.equal(counterAgrees(ABSOLUTE_TOLERANCE_J, 0), true);
    assert.equal(counterAgrees(ABSOLUTE_TOLERANCE_J + 0.01, 0), false);
    assert.equal(counterAgrees(-1, 0), false, 'a counter going backwards is never trusted');
  });

  test('power cap: W ↔ µW, range checked before the call, permission errors are clear', async () => {
    const { pio, fake } = await platformWith({ device_count: 2, '1.no_permission': 'amdsmi_set_power_cap' });
    await pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, 300);
    assert.equal(fake.get('0.cap_uw'), '300000000');
    assert.deepEqual(fake.callsTo('amdsmi_set_power_cap'), ['amdsmi_set_power_cap 0 0 300000000']);
    assert.equal(await pio.readSignal('GPU_POWER_LIMIT_CONTROL', GPU, 0), 300);
    await assert.rejects(
      pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, 600),
      (err: Error) =>
        err instanceof InvalidArgumentError &&
        /600 W is outside the device's range 100\.\.550 W/.test(err.message),
    );
    await assert.rejects(pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 7, 300), /out of range for gpu/);
    await assert.rejects(pio.writeControl('GPU_TEMPERATURE', GPU, 0, 300), /no support for control/);
    assert.equal(fake.callsTo('amdsmi_set_power_cap').length, 1, 'no call for refused input');
    await assert.rejects(
      pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 1, 300),
      (err: Error) =>
        err instanceof PermissionError &&
        /amdsmi_set_power_cap: AMDSMI_STATUS_NO_PERM: Permission Denied/.test(err.message),
    );
  });

  test('unsupported functions make signals absent; refused reads are diagnosed', async () => {
    const { pio } = await platformWith({
      device_count: 2,
      '0.unsupported': 'amdsmi_get_temp_metric',
      '1.unsupported': 'amdsmi_get_temp_metric',
      '1.no_permission': 'amdsmi_get_gpu_activity',
    });
    assert.equal(pio.isValidSignal('GPU_TEMPERATURE'), false);
    assert.equal(await pio.readSignal('GPU_UTILIZATION', GPU, 0), 0);
    await assert.rejects(pio.readSignal('GPU_UTILIZATION', GPU, 1), /not available at gpu 1/);
    const diag = pio.diagnostics().find((d) => d.signal === 'AMDSMI::GPU_UTILIZATION');
    assert.match(diag?.reason ?? '', /gpu 1: amdsmi_get_gpu_activity: AMDSMI_STATUS_NO_PERM/);
  });

  test('save → change → restore returns the power cap', async () => {
    const { pio, fake } = await platformWith({ '0.cap_uw': 450000000 });
    const dir = tempDir();
    await pio.saveControls(dir);
    await pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, 200);
    assert.equal(fake.get('0.cap_uw'), '200000000');
    await pio.restoreControls(dir);
    assert.equal(fake.get('0.cap_uw'), '450000000');
  });

  test('an init failure and zero GPUs are both reasons in the listing', async () => {
    const failed = await platformWith({ init_error: 34 });
    assert.match(failed.pio.diagnostics()[0]!.reason, /^amdsmi_init: .*\(status 34\)$/);
    const none = await platformWith({ device_count: 0 });
    assert.deepEqual(none.pio.diagnostics(), [
      { backend: 'AMDSMI', reason: 'AMDSMI: the library reports no GPUs' },
    ]);
  });
});

describe('AMD SMI library versions', { skip }, () => {
  // The two generations' amdsmi_power_info_t: 68 bytes of 32-bit members, 192 with 64-bit ones.
  for (const [generation, build, version] of [
    ['lib 24.x (68-byte power info)', AMDSMI_LIB24, '24.7.1.0'],
    ['lib 26.x (192-byte power info)', {}, '26.2.1'],
  ] as const) {
    test(`${generation}: power read from that generation's layout`, async () => {
      const { pio, fake } = await platformWith({ device_count: 2 }, build);
      assert.equal(metadataOf(pio).libraryVersion, version);
      await assertReads(pio, fake, 1, [
        ['GPU_POWER', { '1.power_w': 275, '1.current_power_w': 290 }, 275],
        // No average (MI300): the current power, the member beside it.
        ['GPU_POWER', { '1.power_w': 0xffffffff, '1.current_power_w': 550 }, 550],
        // Voltages and the limit sit after the powers: a blind read would return one of them.
        ['GPU_POWER', { '1.power_w': 180, '1.gfx_mv': 700, '1.soc_mv': 750, '1.cap_uw': 400e6 }, 180],
        ['GPU_POWER_LIMIT_DEFAULT', { '1.cap_default_uw': 480e6 }, 480],
        ['GPU_CORE_FREQUENCY_STATUS', { '1.gfx_mhz': 1650 }, 1.65e9],
      ]);
      assert.deepEqual(pio.diagnostics(), []);
    });
  }

  for (const [what, build, state, version] of [
    ['a lib 24.x older than 24.6 (ROCm 6.1)', AMDSMI_LIB24, { lib_major: 5 }, '24.5.1.0'],
    ['a lib 25.x (ROCm 6.4)', AMDSMI_LIB24, { lib_year: 25, lib_major: 3 }, '25.3.1.0'],
    ['a lib newer than 26.x', {}, { lib_major: 99 }, '99.2.1'],
  ] as const) {
    test(`${what} is refused in one line naming its version, never read blind`, async () => {
      const { pio, fake } = await platformWith({ device_count: 1, ...state }, build);
      assert.deepEqual(pio.diagnostics(), [
        {
          backend: 'AMDSMI',
          reason: `libamd_smi version ${version}: joulegate knows the struct layouts of 24.6.x, 24.7.x (ROCm 6.2, 6.3) and 26.x (ROCm 7) only`,
        },
      ]);
      assert.equal(pio.topology.numDomain(GPU), 0);
      assert.deepEqual(fake.calls(), ['amdsmi_init 2', 'amdsmi_shut_down'], 'the reference is given back');
    });
  }

  test('a library without amdsmi_get_lib_version is refused: its layouts cannot be told', async () => {
    const { pio, fake } = await platformWith({ device_count: 1 }, { hide: ['amdsmi_get_lib_version'] });
    assert.match(
      pio.diagnostics()[0]!.reason,
      /^libamd_smi \(\S+libamd_smi\.so\) lacks amdsmi_get_lib_version, which joulegate needs$/,
    );
    assert.deepEqual(fake.calls(), []);
  });

  test('a library lacking a query loses only the signals it feeds, each named', async () => {
    const { pio } = await platformWith(
      { device_count: 1 },
      { hide: ['amdsmi_get_gpu_activity', 'amdsmi_set_power_cap'] },
    );
    assert.deepEqual(
      pio.diagnostics().map((d) => `${d.signal}: ${d.reason}`),
      [
        'AMDSMI::GPU_UTILIZATION: libamd_smi lacks amdsmi_get_gpu_activity',
        'AMDSMI::GPU_MEMORY_UTILIZATION: libamd_smi lacks amdsmi_get_gpu_activity',
        'AMDSMI::GPU_POWER_LIMIT_CONTROL: libamd_smi lacks amdsmi_set_power_cap',
      ],
    );
    assert.equal(await pio.readSignal('GPU_POWER', GPU, 0), 300);
    assert.equal(await pio.readSignal('GPU_POWER_LIMIT_MAX_AVAIL', GPU, 0), 550);
  });
});
