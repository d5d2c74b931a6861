import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { FakeGpu } from '../helpers/fake-gpu.js';
import { needsAdmin, needsCompiler } from '../helpers/requirements.js';

const admin = needsAdmin();

const skip = needsCompiler();

// The CLI runs in its own process: NVML/AMD SMI are initialised there, through the same koffi code.
describe('joulegate read/write with the fake GPU libraries', { skip }, () => {
  test('read --info-all lists the GPU signals of both vendors on gpu domains', async () => {
    const nvml = new FakeGpu('nvml', { device_count: 2 });
    const amd = new FakeGpu('amdsmi', { device_count: 1 });
    const r = await runCli(['read', '--info-all'], { env: { ...nvml.env, ...amd.env } });
    assert.equal(r.code, 0, r.stderr);
    for (const name of [
      'NVML::GPU_POWER',
      'NVML::GPU_ENERGY_CONSUMPTION_TOTAL',
      'AMDSMI::GPU_ENERGY',
      'GPU_POWER_LIMIT_CONTROL',
    ]) {
      const block = r.stdout.split(/\n(?=\S)/).find((b) => b.startsWith(`${name}:`));
      assert.ok(block, `${name} listed`);
      assert.match(block, /domain: gpu/);
    }
    assert.deepEqual(nvml.callsTo('nvmlInit_v2'), ['nvmlInit_v2']);
    assert.deepEqual(amd.callsTo('amdsmi_init'), ['amdsmi_init 2'], 'initialised for AMD GPUs only');
    // Three GPUs: two NVML, then one AMD.
    const domains = await runCli(['read', '--domain'], { env: { ...nvml.env, ...amd.env } });
    assert.match(domains.stdout, /^gpu {25}3$/m);
  });

  test('write GPU_POWER_LIMIT_CONTROL gpu 0 250 reaches the library as 250000 mW', async () => {
    const nvml = new FakeGpu('nvml', { device_count: 2 });
    const r = await runCli(['write', 'GPU_POWER_LIMIT_CONTROL', 'gpu', '0', '250'], { env: nvml.env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(nvml.get('0.limit_mw'), '250000');
    assert.deepEqual(nvml.callsTo('nvmlDeviceSet'), ['nvmlDeviceSetPowerManagementLimit 0 250000']);
    const read = await runCli(['read', 'GPU_POWER_LIMIT_CONTROL', 'gpu', '0'], { env: nvml.env });
    assert.equal(read.stdout, '250\n');
  });

  test('an out-of-range or misaddressed write is one line on stderr, non-zero, and never reaches the library', {
    skip: admin,
  }, async () => {
    const nvml = new FakeGpu('nvml', { device_count: 1 });
    for (const args of [
      ['GPU_POWER_LIMIT_CONTROL', 'gpu', '0', '9999'],
      ['GPU_POWER_LIMIT_CONTROL', 'gpu', '3', '250'],
      ['GPU_TEMPERATURE', 'gpu', '0', '250'],
    ]) {
      const r = await runCli(['write', ...args], { env: nvml.env });
      assert.notEqual(r.code, 0, args.join(' '));
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    }
    assert.deepEqual(nvml.callsTo('nvmlDeviceSet'), []);
  });

  test('sensors lists under "Not available" what a library lacks and a library of unknown version', async () => {
    const nvml = new FakeGpu('nvml', { device_count: 1 }, { hide: ['nvmlDeviceGetUtilizationRates'] });
    const amd = new FakeGpu('amdsmi', { device_count: 1, lib_major: 99 });
    const r = await runCli(['sensors', '--all'], { env: { ...nvml.env, ...amd.env } });
    assert.equal(r.code, 0, r.stderr);
    const [sensors, notAvailable = ''] = r.stdout.split('\nNot available:\n');
    const lines = notAvailable.split('\n');
    for (const line of [
      '  NVML NVML::GPU_UTILIZATION: libnvidia-ml lacks nvmlDeviceGetUtilizationRates',
      '  NVML NVML::GPU_MEMORY_UTILIZATION: libnvidia-ml lacks nvmlDeviceGetUtilizationRates',
      '  AMDSMI: libamd_smi version 99.2.1: joulegate knows the struct layouts of 24.6.x, 24.7.x (ROCm 6.2, 6.3) and 26.x (ROCm 7) only',
    ])
      assert.ok(lines.includes(line), `${line}\nnot in\n${notAvailable}`);
    // The rest of the NVML GPU is there.
    assert.match(sensors!, /NVML::GPU_POWER-gpu-0/);
    assert.match(sensors!, /NVML::GPU_ENERGY_CONSUMPTION_TOTAL-gpu-0/);
  });
});
