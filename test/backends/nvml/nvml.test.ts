import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { NvmlGpuUse, processUtilizationReader } from '../../../src/attribution/gpu-use.js';
import { loadPlatform } from '../../../src/backends/load.js';
import { DomainType } from '../../../src/platform/domains.js';
import { InvalidArgumentError, PermissionError } from '../../../src/platform/errors.js';
import type { PlatformIO } from '../../../src/platform/platform-io.js';
import { availableSensors } from '../../../src/platform/sensors.js';
import { Sysroot } from '../../../src/platform/sysroot.js';
import {
  assertReads,
  deactivateFakes,
  type FakeBuild,
  FakeGpu,
  type FakeState,
  NVML_DEPRECATED_ONLY,
  NVML_WITHOUT_DEPRECATED,
  type ReadCase,
} from '../../helpers/fake-gpu.js';
import { needsCompiler } from '../../helpers/requirements.js';
import { copyFixture, tempDir } from '../../helpers/tmp.js';

const skip = needsCompiler();

const GPU = DomainType.Gpu;
const opened: PlatformIO[] = [];

async function platformWith(
  state: FakeState,
  build?: FakeBuild,
): Promise<{ pio: PlatformIO; fake: FakeGpu }> {
  deactivateFakes();
  const fake = new FakeGpu('nvml', state, build).activate();
  const pio = await loadPlatform({ include: (n) => n === 'NVML' || n === 'TIME' });
  opened.push(pio);
  return { pio, fake };
}

afterEach(async () => {
  for (const pio of opened.splice(0)) await pio.close();
  deactivateFakes();
});

type NvmlMeta = { libraryLacks: string[]; devices: Record<string, unknown>[] };
const metadataOf = (pio: PlatformIO) =>
  pio
    .loadedBackends()
    .find((b) => b.name === 'NVML')!
    .metadata() as NvmlMeta;
const nvmlDiagnostics = (pio: PlatformIO) => pio.diagnostics().filter((d) => d.backend === 'NVML');

const TWO_GPUS: FakeState = {
  device_count: 2,
  '0.name': 'NVIDIA H100 80GB HBM3',
  '0.uuid': 'GPU-aaaaaaaa-0000-0000-0000-000000000000',
  '0.bus_id': '00000000:1B:00.0',
  '0.cpus': '0',
  '1.cpus': '1',
};

describe('NVML backend through the fake libnvidia-ml', { skip }, () => {
  test('each device becomes a gpu domain with its CPU affinity and metadata', async () => {
    const { pio } = await platformWith(TWO_GPUS);
    assert.equal(pio.topology.numDomain(GPU), 2);
    assert.deepEqual(pio.topology.cpusOf(GPU, 0), [0]);
    assert.deepEqual(pio.topology.cpusOf(GPU, 1), [1]);
    const nvml = pio.loadedBackends().find((b) => b.name === 'NVML')!;
    const meta = nvml.metadata() as { devices: Record<string, unknown>[] };
    assert.equal(meta.devices[0]!.uuid, 'GPU-aaaaaaaa-0000-0000-0000-000000000000');
    assert.equal(meta.devices[0]!.name, 'NVIDIA H100 80GB HBM3');
    assert.equal(meta.devices[0]!.pciBusId, '00000000:1B:00.0');
    assert.equal(meta.devices[1]!.pciBusId, '00000000:11:00.0');
    assert.equal(pio.signalInfo('GPU_POWER').domain, GPU);
    assert.equal(pio.signalInfo('GPU_ENERGY').aliasFor, 'NVML::GPU_ENERGY_CONSUMPTION_TOTAL');
    assert.ok(pio.controlNames().includes('NVML::GPU_POWER_LIMIT_CONTROL'));
  });

  // [signal, state set on gpu 1, expected SI value]
  const table: ReadCase[] = [
    ['GPU_POWER', { '1.power_mw': 123456 }, 123.456],
    ['GPU_ENERGY', { '1.energy_mj': 5000500, '1.energy_scale': 0 }, 5000.5],
    ['GPU_UTILIZATION', { '1.util_gpu': 57 }, 0.57],
    ['NVML::GPU_MEMORY_UTILIZATION', { '1.util_mem': 31 }, 0.31],
    ['GPU_MEMORY_USED', { '1.mem_used': 1234567890 }, 1234567890],
    ['GPU_MEMORY_TOTAL', { '1.mem_total': 85520809984 }, 85520809984],
    ['GPU_CORE_FREQUENCY_STATUS', { '1.clock_sm_mhz': 1410 }, 1.41e9],
    ['GPU_CORE_FREQUENCY_MAX_AVAIL', { '1.max_clock_graphics_mhz': 1980 }, 1.98e9],
    ['GPU_MEMORY_FREQUENCY_STATUS', { '1.clock_mem_mhz': 2619 }, 2.619e9],
    ['GPU_TEMPERATURE', { '1.temp_c': 67 }, 67],
    ['GPU_POWER_LIMIT_MIN_AVAIL', { '1.limit_min_mw': 200000 }, 200],
    ['GPU_POWER_LIMIT_MAX_AVAIL', { '1.limit_max_mw': 700000 }, 700],
    ['GPU_POWER_LIMIT_DEFAULT', { '1.limit_default_mw': 650000 }, 650],
    ['GPU_POWER_LIMIT_CONTROL', { '1.limit_mw': 450000 }, 450],
    ['GPU_THROTTLE_REASONS', { '1.throttle': 0x24 }, 0x24],
    ['GPU_PCIE_RX_THROUGHPUT', { '1.pcie_rx_kbs': 1000 }, 1024000],
    ['GPU_PCIE_TX_THROUGHPUT', { '1.pcie_tx_kbs': 3 }, 3072],
  ];
  test('every signal reads the library value in SI units', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS);
    await assertReads(pio, fake, 1, table);
  });

  test('a batch reads each device once per readBatch and board totals sum the GPUs', async () => {
    const { pio, fake } = await platformWith({ ...TWO_GPUS, '0.power_mw': 100000, '1.power_mw': 250500 });
    const board = pio.pushSignal('GPU_POWER', DomainType.Board, 0);
    const gpu1 = pio.pushSignal('GPU_POWER', GPU, 1);
    await pio.readBatch();
    assert.equal(pio.sample(board), 350.5);
    assert.equal(pio.sample(gpu1), 250.5);
    fake.set({ '1.power_mw': 300000 });
    assert.equal(pio.sample(gpu1), 250.5, 'sample() returns the last batch, not a new read');
    await pio.readBatch();
    assert.equal(pio.sample(gpu1), 300);
    assert.equal(pio.sample(board), 400);
  });

  test('the energy counter advances with power (Σ deltas)', async () => {
    const { pio, fake } = await platformWith({ ...TWO_GPUS, '0.energy_scale': 0, '0.energy_mj': 1000 });
    const h = pio.pushSignal('GPU_ENERGY', GPU, 0);
    await pio.readBatch();
    const e0 = pio.sample(h);
    fake.set({ '0.energy_mj': 1250 });
    await pio.readBatch();
    assert.equal(pio.sample(h) - e0, 0.25);
  });

  test('a function a device does not support makes that signal absent there, not 0 and not an error', async () => {
    const { pio } = await platformWith({
      ...TWO_GPUS,
      '1.unsupported': 'nvmlDeviceGetTotalEnergyConsumption,nvmlDeviceGetPcieThroughput',
      '0.unsupported': 'nvmlDeviceGetPcieThroughput',
    });
    assert.ok((await pio.readSignal('GPU_ENERGY', GPU, 0)) > 0);
    await assert.rejects(pio.readSignal('GPU_ENERGY', GPU, 1), /not available at gpu 1/);
    assert.throws(() => pio.pushSignal('GPU_ENERGY', GPU, 1), /not available at gpu 1/);
    // The perun-style sensor listing offers the counter only where it exists.
    const nvml = pio.loadedBackends().find((b) => b.name === 'NVML')!;
    const sensors = availableSensors(nvml, pio.topology);
    assert.deepEqual(sensors['NVML::GPU_ENERGY_CONSUMPTION_TOTAL-gpu-0'], ['nvml', 'gpu', 'J']);
    assert.equal(sensors['NVML::GPU_ENERGY_CONSUMPTION_TOTAL-gpu-1'], undefined);
    assert.ok(sensors['NVML::GPU_POWER-gpu-1']);
    // Unsupported on every device: the name is not offered at all.
    assert.equal(pio.isValidSignal('GPU_PCIE_RX_THROUGHPUT'), false);
    const meta = pio
      .loadedBackends()
      .find((b) => b.name === 'NVML')!
      .metadata() as {
      devices: { unsupported: string[] }[];
    };
    assert.deepEqual(meta.devices[1]!.unsupported, [
      'GPU_ENERGY_CONSUMPTION_TOTAL',
      'GPU_PCIE_RX_THROUGHPUT',
      'GPU_PCIE_TX_THROUGHPUT',
    ]);
    assert.deepEqual(
      pio.diagnostics().filter((d) => d.backend === 'NVML'),
      [],
      'unsupported is not a problem to report',
    );
  });

  test('a read refused with NO_PERMISSION is reported with its reason', async () => {
    const { pio } = await platformWith({ ...TWO_GPUS, '0.no_permission': 'nvmlDeviceGetTemperatureV' });
    const diag = pio.diagnostics().find((d) => d.signal === 'NVML::GPU_TEMPERATURE');
    assert.ok(diag, 'diagnostic for the refused read');
    assert.match(diag.reason, /gpu 0: nvmlDeviceGetTemperatureV: Insufficient Permissions \(status 4\)/);
    assert.equal(await pio.readSignal('GPU_TEMPERATURE', GPU, 1), 40);
  });

  test('a failing read after setup is NaN in a batch and an error in a single read', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS);
    const h = pio.pushSignal('GPU_POWER', GPU, 0);
    fake.set({ '0.no_permission': 'nvmlDeviceGetPowerUsage' });
    await pio.readBatch();
    assert.ok(Number.isNaN(pio.sample(h)));
    await assert.rejects(pio.readSignal('GPU_POWER', GPU, 0), PermissionError);
  });

  test('GPU_POWER_LIMIT_CONTROL reaches the library in mW', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS);
    await pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, 250);
    assert.equal(fake.get('0.limit_mw'), '250000');
    assert.deepEqual(fake.callsTo('nvmlDeviceSetPowerManagementLimit'), [
      'nvmlDeviceSetPowerManagementLimit 0 250000',
    ]);
    assert.equal(await pio.readSignal('GPU_POWER_LIMIT_CONTROL', GPU, 0), 250);
    // Board-level writes split a sum-aggregated limit over the GPUs.
    await pio.writeControl('GPU_POWER_LIMIT_CONTROL', DomainType.Board, 0, 900.5);
    assert.equal(fake.get('0.limit_mw'), '450250');
    assert.equal(fake.get('1.limit_mw'), '450250');
  });

  test('bad input is refused before any call that changes hardware', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS);
    await assert.rejects(
      pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, 800),
      (err: Error) =>
        err instanceof InvalidArgumentError &&
        /800 W is outside the device's range 100\.\.700 W/.test(err.message),
    );
    await assert.rejects(pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, 50), /outside/);
    await assert.rejects(pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 2, 250), /out of range for gpu/);
    await assert.rejects(pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, Number.NaN), /invalid value/);
    await assert.rejects(pio.writeControl('GPU_POWER', GPU, 0, 250), /no support for control GPU_POWER/);
    await assert.rejects(
      pio.writeControl('GPU_CORE_FREQUENCY_MAX_CONTROL', GPU, 0, 5e9),
      /outside 1 MHz\.\.1980 MHz/,
    );
    await assert.rejects(pio.writeControl('GPU_CORE_FREQUENCY_MIN_CONTROL', GPU, 0, -1e6), /outside/);
    assert.deepEqual(
      fake.calls().filter((c) => c.startsWith('nvmlDeviceSet') || c.startsWith('nvmlDeviceReset')),
      [],
    );
  });

  test('NO_PERMISSION on a set is a clear permission error', async () => {
    const { pio, fake } = await platformWith({
      ...TWO_GPUS,
      '1.no_permission': 'nvmlDeviceSetPowerManagementLimit',
    });
    await assert.rejects(
      pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 1, 300),
      (err: Error) =>
        err instanceof PermissionError &&
        /nvmlDeviceSetPowerManagementLimit: Insufficient Permissions \(status 4\); changing GPU settings needs root/.test(
          err.message,
        ),
    );
    assert.equal(fake.get('1.limit_mw'), undefined);
  });

  test('locked clocks: min/max bounds map onto SetGpuLockedClocks and clearing both resets', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS);
    assert.equal(await pio.readSignal('GPU_CORE_FREQUENCY_MIN_CONTROL', GPU, 0), 0);
    await pio.writeControl('GPU_CORE_FREQUENCY_MIN_CONTROL', GPU, 0, 1.0e9);
    await pio.writeControl('GPU_CORE_FREQUENCY_MAX_CONTROL', GPU, 0, 1.5e9);
    assert.deepEqual(fake.callsTo('nvmlDeviceSetGpuLockedClocks'), [
      'nvmlDeviceSetGpuLockedClocks 0 1000 1980',
      'nvmlDeviceSetGpuLockedClocks 0 1000 1500',
    ]);
    assert.equal(await pio.readSignal('GPU_CORE_FREQUENCY_MAX_CONTROL', GPU, 0), 1.5e9);
    await assert.rejects(
      pio.writeControl('GPU_CORE_FREQUENCY_MIN_CONTROL', GPU, 0, 1.6e9),
      /would exceed upper bound/,
    );
    assert.equal(fake.callsTo('nvmlDeviceSetGpuLockedClocks').length, 2);
    await pio.writeControl('GPU_CORE_FREQUENCY_MIN_CONTROL', GPU, 0, 0);
    await pio.writeControl('GPU_CORE_FREQUENCY_MAX_CONTROL', GPU, 0, 0);
    assert.deepEqual(fake.callsTo('nvmlDeviceResetGpuLockedClocks'), ['nvmlDeviceResetGpuLockedClocks 0']);
    assert.equal(fake.get('0.locked_max_mhz'), '0');
  });

  test('save → change → restore returns power limits and clock locks to the saved state', async () => {
    const { pio, fake } = await platformWith({ ...TWO_GPUS, '0.limit_mw': 400000, '1.limit_mw': 600000 });
    const dir = tempDir();
    await pio.saveControls(dir);
    await pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, 300);
    await pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 1, 200);
    await pio.writeControl('GPU_CORE_FREQUENCY_MIN_CONTROL', GPU, 1, 1.2e9);
    await pio.writeControl('GPU_CORE_FREQUENCY_MAX_CONTROL', GPU, 1, 1.4e9);
    assert.equal(fake.get('1.locked_min_mhz'), '1200');
    await pio.restoreControls(dir);
    assert.equal(fake.get('0.limit_mw'), '400000');
    assert.equal(fake.get('1.limit_mw'), '600000');
    assert.equal(fake.get('1.locked_min_mhz'), '0');
    assert.equal(fake.get('1.locked_max_mhz'), '0');
    assert.ok(fake.callsTo('nvmlDeviceResetGpuLockedClocks').includes('nvmlDeviceResetGpuLockedClocks 1'));
    assert.equal(await pio.readSignal('GPU_CORE_FREQUENCY_MAX_CONTROL', GPU, 1), 0);
  });

  test('setup initialises NVML in the current process every time and close() shuts it down', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS);
    await pio.close();
    opened.splice(opened.indexOf(pio), 1);
    const again = await loadPlatform({ include: (n) => n === 'NVML' });
    opened.push(again);
    assert.deepEqual(
      fake.calls().filter((c) => /^nvml(Init|Shutdown)/.test(c)),
      ['nvmlInit_v2', 'nvmlShutdown', 'nvmlInit_v2'],
    );
    assert.ok((await again.readSignal('GPU_POWER', GPU, 0)) > 0);
  });

  test('two PlatformIOs in one process each hold their own NVML reference', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS);
    const second = await loadPlatform({ include: (n) => n === 'NVML' });
    await second.close();
    assert.equal(await pio.readSignal('GPU_POWER', GPU, 0), 100);
    assert.deepEqual(
      fake.calls().filter((c) => /^nvml(Init|Shutdown)/.test(c)),
      ['nvmlInit_v2', 'nvmlInit_v2', 'nvmlShutdown'],
    );
  });

  test('a library that finds no GPUs is released again and listed as missing', async () => {
    const { pio, fake } = await platformWith({ device_count: 0 });
    assert.deepEqual(pio.diagnostics(), [{ backend: 'NVML', reason: 'NVML: the library reports no GPUs' }]);
    assert.deepEqual(fake.calls(), ['nvmlInit_v2', 'nvmlShutdown']);
  });

  test('an NVML that fails to initialise is listed with the reason; the rest still works', async () => {
    const { pio } = await platformWith({ init_error: 9 });
    assert.deepEqual(
      pio.diagnostics().filter((d) => d.backend === 'NVML'),
      [{ backend: 'NVML', reason: 'nvmlInit_v2: Driver Not Loaded (status 9)' }],
    );
    assert.ok((await pio.readSignal('TIME', DomainType.Board, 0)) >= 0);
    assert.equal(pio.topology.numDomain(GPU), 0);
  });

  test('no driver, or a driver without its library: the backend is not loaded, with the reason', async () => {
    deactivateFakes();
    const gpuBackends = (n: string) => n === 'NVML' || n === 'AMDSMI' || n === 'TIME';
    // No kernel driver under the sysroot: neither koffi nor the library is tried.
    const bare = copyFixture('vm-1s4c');
    const pio = await loadPlatform({ include: gpuBackends, sysroot: new Sysroot(bare) });
    opened.push(pio);
    const reasons = Object.fromEntries(pio.diagnostics().map((d) => [d.backend, d.reason]));
    assert.equal(
      reasons.NVML,
      'no NVIDIA driver loaded (none of /proc/driver/nvidia, /dev/nvidiactl, /dev/dxg exists)',
    );
    assert.equal(reasons.AMDSMI, 'no amdgpu driver loaded (none of /sys/module/amdgpu, /dev/kfd exists)');
    // A driver is loaded but the user-space library is not installed.
    const withDrivers = copyFixture('vm-1s4c');
    mkdirSync(join(withDrivers, 'proc/driver/nvidia'), { recursive: true });
    mkdirSync(join(withDrivers, 'sys/module/amdgpu'), { recursive: true });
    const noLib = await loadPlatform({ include: gpuBackends, sysroot: new Sysroot(withDrivers) });
    opened.push(noLib);
    const why = Object.fromEntries(noLib.diagnostics().map((d) => [d.backend, d.reason]));
    assert.match(why.NVML!, /^libnvidia-ml\.so\.1 not found \(NVIDIA user-space driver not installed\?\)/);
    assert.match(why.AMDSMI!, /^libamd_smi\.so not found \(ROCm \/ AMD SMI not installed\?\)/);
    // An explicit library path is always tried, driver or not.
    process.env.JOULEGATE_NVML_LIB = '/nonexistent/libnvidia-ml.so.1';
    const other = await loadPlatform({ include: (n) => n === 'NVML', sysroot: new Sysroot(bare) });
    opened.push(other);
    assert.match(
      other.diagnostics()[0]!.reason,
      /^\/nonexistent\/libnvidia-ml\.so\.1 \(from JOULEGATE_NVML_LIB\) not found/,
    );
    assert.ok((await pio.readSignal('TIME', DomainType.Board, 0)) >= 0);
    assert.equal(pio.isValidSignal('GPU_POWER'), false);
  });
});

describe('NVML libraries of other driver generations', { skip }, () => {
  // [signal, state set on gpu 1, expected SI value]: what a driver of any generation must give.
  const essentials: ReadCase[] = [
    ['GPU_POWER', { '1.power_mw': 234567 }, 234.567],
    ['GPU_ENERGY', { '1.energy_mj': 7000250, '1.energy_scale': 0 }, 7000.25],
    ['GPU_TEMPERATURE', { '1.temp_c': 71 }, 71],
    ['GPU_POWER_LIMIT_MIN_AVAIL', { '1.limit_min_mw': 150000 }, 150],
    ['GPU_POWER_LIMIT_MAX_AVAIL', { '1.limit_max_mw': 650000 }, 650],
    ['GPU_POWER_LIMIT_DEFAULT', { '1.limit_default_mw': 600000 }, 600],
    ['GPU_POWER_LIMIT_CONTROL', { '1.limit_mw': 425000 }, 425],
    ['GPU_THROTTLE_REASONS', { '1.throttle': 0x28 }, 0x28],
  ];

  test('without the deprecated and per-process calls (NVML 13): power, energy, temperature and limits through the successors', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS, NVML_WITHOUT_DEPRECATED);
    await assertReads(pio, fake, 1, essentials);
    // nvmlTemperature_t carries a signed value; the deprecated call's is unsigned.
    await assertReads(pio, fake, 0, [['GPU_TEMPERATURE', { '0.temp_c': -7 }, -7]]);
    assert.deepEqual(metadataOf(pio).libraryLacks, [
      'nvmlDeviceGetTemperature',
      'nvmlDeviceGetCurrentClocksThrottleReasons',
      'nvmlDeviceGetProcessUtilization',
    ]);
    // No signal is lost; what is lost is named once, with the missing function.
    assert.deepEqual(nvmlDiagnostics(pio), [
      {
        backend: 'NVML',
        reason: 'per-process GPU attribution unavailable: libnvidia-ml lacks nvmlDeviceGetProcessUtilization',
      },
    ]);
    // Attribution goes on without per-process samples and says why, once per GPU.
    const told: string[] = [];
    const use = new NvmlGpuUse(processUtilizationReader(pio)!, (line) => told.push(line));
    assert.deepEqual(use.read(1, []), []);
    use.read(1, []);
    assert.deepEqual(told, [
      'GPU 0: per-process utilisation not read (libnvidia-ml lacks nvmlDeviceGetProcessUtilization)',
      'GPU 1: per-process utilisation not read (libnvidia-ml lacks nvmlDeviceGetProcessUtilization)',
    ]);
  });

  test('an old library with only the deprecated calls serves the same signals through them', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS, NVML_DEPRECATED_ONLY);
    await assertReads(pio, fake, 1, essentials);
    assert.deepEqual(metadataOf(pio).libraryLacks, [
      'nvmlDeviceGetTemperatureV',
      'nvmlDeviceGetCurrentClocksEventReasons',
    ]);
    assert.deepEqual(nvmlDiagnostics(pio), []);
    // Per-process samples are there too.
    fake.set({ '0.proc_util': '4242:37', '0.proc_util_ts': 5000 });
    const nvml = processUtilizationReader(pio)!;
    assert.deepEqual(nvml.processUtilization(0, 0n), [{ pid: 4242, timeStampUs: 5000n, smUtil: 37 }]);
  });

  test('a library lacking a function loses only the signals it feeds, each named with the function', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS, {
      hide: [
        'nvmlDeviceGetUtilizationRates',
        'nvmlDeviceGetTemperatureV',
        'nvmlDeviceGetTemperature',
        'nvmlDeviceSetGpuLockedClocks',
        'nvmlDeviceGetCpuAffinity',
        'nvmlDeviceGetMinorNumber',
      ],
    });
    const lacks = (fn: string) => `libnvidia-ml lacks ${fn}`;
    assert.deepEqual(
      nvmlDiagnostics(pio).map((d) => `${d.signal ?? '-'}: ${d.reason}`),
      [
        `-: GPU CPU affinity unknown, all CPUs assumed: ${lacks('nvmlDeviceGetCpuAffinity')}`,
        `-: GPUs bound to a job's cgroup not recognised: ${lacks('nvmlDeviceGetMinorNumber')}`,
        `NVML::GPU_UTILIZATION: ${lacks('nvmlDeviceGetUtilizationRates')}`,
        `NVML::GPU_MEMORY_UTILIZATION: ${lacks('nvmlDeviceGetUtilizationRates')}`,
        `NVML::GPU_TEMPERATURE: ${lacks('nvmlDeviceGetTemperatureV and nvmlDeviceGetTemperature')}`,
        `NVML::GPU_CORE_FREQUENCY_MIN_CONTROL: ${lacks('nvmlDeviceSetGpuLockedClocks')}`,
        `NVML::GPU_CORE_FREQUENCY_MAX_CONTROL: ${lacks('nvmlDeviceSetGpuLockedClocks')}`,
      ],
    );
    for (const name of ['GPU_UTILIZATION', 'GPU_TEMPERATURE', 'NVML::GPU_CORE_FREQUENCY_MAX_CONTROL'])
      assert.equal(pio.isValidSignal(name), false, name);
    assert.equal(pio.controlNames().includes('NVML::GPU_CORE_FREQUENCY_MIN_CONTROL'), false);
    // Everything else still reads and writes.
    await assertReads(pio, fake, 1, [
      ['GPU_POWER', { '1.power_mw': 99000 }, 99],
      ['GPU_CORE_FREQUENCY_STATUS', { '1.clock_sm_mhz': 1200 }, 1.2e9],
    ]);
    await pio.writeControl('GPU_POWER_LIMIT_CONTROL', GPU, 0, 300);
    assert.equal(fake.get('0.limit_mw'), '300000');
    // Without an affinity each GPU is near every CPU; without minors no GPU is a job's own.
    assert.deepEqual(pio.topology.cpusOf(GPU, 1), pio.topology.cpusOf(DomainType.Board, 0));
    assert.deepEqual(processUtilizationReader(pio)!.gpuMinors(), [
      { gpu: 0, minor: undefined },
      { gpu: 1, minor: undefined },
    ]);
  });

  test('a library lacking a function the backend cannot start without is refused in one line', async () => {
    const { pio, fake } = await platformWith(TWO_GPUS, { hide: ['nvmlDeviceGetCount_v2'] });
    const [missing] = nvmlDiagnostics(pio);
    assert.match(
      missing!.reason,
      /^libnvidia-ml \(\S+libnvidia-ml\.so\.1\) lacks nvmlDeviceGetCount_v2, which joulegate needs$/,
    );
    assert.equal(pio.topology.numDomain(GPU), 0);
    assert.deepEqual(fake.calls(), [], 'refused before nvmlInit');
  });
});
