import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConsumerSpec } from '../../src/attribution/consumers.js';
import { openConsumer } from '../../src/attribution/consumers.js';
import type { MeasuredShares } from '../../src/attribution/engine.js';
import { parseDevicesList } from '../../src/attribution/gpu-binding.js';
import { AttributionMeter, energySources } from '../../src/attribution/meter.js';
import { gpuUseOf } from '../../src/attribution/run.js';
import { loadPlatform } from '../../src/backends/load.js';
import { Sampler } from '../../src/monitor/sampler.js';
import { selectSeries } from '../../src/monitor/signals.js';
import type { SampleSet } from '../../src/platform/sample-set.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { FakeGpu } from '../helpers/fake-gpu.js';
import { needsCompiler } from '../helpers/requirements.js';
import { copyFixture } from '../helpers/tmp.js';
import { put } from './helpers.js';

const skip = needsCompiler();

// GPU energy read from the fake NVML (built from test/fakes/fake_nvml.c, loaded through the real
// koffi FFI) split among Slurm jobs of the attribution fixture nodes by NVML's per-process
// utilisation samples, or given whole to the job whose cgroup the GPU is bound to.

/** Two readings 150 ms apart through the monitor's sampler and meter; the GPU shares between them. */
async function gpuShares(root: string, specs: ConsumerSpec[]): Promise<MeasuredShares[]> {
  const sysroot = new Sysroot(root);
  const pio = await loadPlatform({ sysroot, include: (n) => n === 'NVML' });
  try {
    const series = selectSeries(pio).series;
    const warnings: string[] = [];
    const meter = new AttributionMeter({
      sources: energySources(series),
      root: sysroot,
      consumers: specs.map((s) => openConsumer(s, sysroot)),
      gpu: gpuUseOf(pio, (line) => warnings.push(line)),
      context: { topology: pio.topology, usPerTick: 10_000, idlePolicy: 'none' },
    });
    const sampler = new Sampler(pio, series);
    const data: SampleSet = { originMs: 0, times: [], values: series.map(() => []) };
    const take = async () => {
      await sampler.read(data);
      return meter.record(
        data.times.at(-1)!,
        data.values.map((v) => v.at(-1)!),
      );
    };
    await take();
    await sleep(150);
    const shares = await take();
    assert.deepEqual(warnings, []);
    return shares.map((s) => {
      assert.equal(s.status, 'ok', JSON.stringify(s));
      const m = s as MeasuredShares;
      assert.equal(m.consumers.reduce((a, c) => a + c.uj, 0) + m.unattributedUj + m.idleUj, m.measuredUj);
      assert.deepEqual(m.unknown, []);
      return m;
    });
  } finally {
    await pio.close();
  }
}

const uj = (m: MeasuredShares, id: string) => m.consumers.find((c) => c.id === id)!.uj;
/** Within 1 µJ of the exact fraction (the engine's largest-remainder rounding). */
function near(actual: number, exact: number): void {
  assert.ok(Math.abs(actual - exact) <= 1, `${actual} µJ vs ${exact} µJ`);
}

describe('GPU energy attribution', { skip }, () => {
  it('split by NVML per-process SM utilisation: two jobs and a process of no consumer', async () => {
    // Job 101 holds pid 1011, job 202 pid 2021; pid 7777 belongs to neither.
    new FakeGpu('nvml', {
      device_count: 2,
      '0.power_mw': 200000,
      '1.power_mw': 100000,
      '0.proc_util': '1011:60,2021:20,7777:20',
    }).activate();
    const [gpu0, gpu1] = await gpuShares(copyFixture('attribution/node'), [
      { kind: 'slurm-job', jobId: 101 },
      { kind: 'slurm-job', jobId: 202 },
    ]);
    assert.ok(gpu0!.measuredUj > 0 && gpu1!.measuredUj > 0);
    near(uj(gpu0!, 'slurm:101'), gpu0!.measuredUj * 0.6);
    near(uj(gpu0!, 'slurm:202'), gpu0!.measuredUj * 0.2);
    near(gpu0!.unattributedUj, gpu0!.measuredUj * 0.2);
    assert.equal(gpu0!.otherKnown, true);
    // No process used GPU 1 (NVML has no sample newer than the last one): nobody's energy.
    assert.equal(gpu1!.unattributedUj, gpu1!.measuredUj);
  });

  it('a GPU bound to one job (cgroup v1 devices.list) is all that job’s', async () => {
    const root = copyFixture('attribution/node-v1');
    // Job 303 may open /dev/nvidia1 (and the control devices), not /dev/nvidia0.
    put(
      root,
      'sys/fs/cgroup/devices/slurm/uid_1000/job_303/devices.list',
      'c 195:1 rw\nc 195:255 rw\nc 1:3 rwm\n',
    );
    new FakeGpu('nvml', {
      device_count: 2,
      '0.proc_util': '3031:50,9999:50',
      // A process of another user on the bound GPU (MPS, or before the binding): still the job's.
      '1.proc_util': '9999:80',
    }).activate();
    const [gpu0, gpu1] = await gpuShares(root, [{ kind: 'slurm-job', jobId: 303 }]);
    near(uj(gpu0!, 'slurm:303'), gpu0!.measuredUj * 0.5);
    assert.equal(uj(gpu1!, 'slurm:303'), gpu1!.measuredUj);
    assert.equal(gpu1!.unattributedUj, 0);
  });

  it('devices.list: only NVIDIA GPU minors count; an allow-all rule binds nothing', () => {
    assert.deepEqual(
      parseDevicesList('c 195:3 rw\nc 195:0 rw\nc 195:255 rw\nc 195:254 rw\nb 8:0 r\n'),
      [0, 3],
    );
    assert.equal(parseDevicesList('a *:* rwm\n'), undefined);
    assert.equal(parseDevicesList('c 195:* rw\n'), undefined);
    assert.deepEqual(parseDevicesList('c 1:3 rwm\n'), []);
  });
});
