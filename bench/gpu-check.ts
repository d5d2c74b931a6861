/**
 * GPU check for a machine with an NVIDIA GPU (run as root to exercise the power limit):
 *
 *   npm run build && node --import tsx bench/gpu-check.ts [--seconds 3] [--no-write]
 *
 * Lists the NVML devices, reads every NVML signal 10 times per device, compares the energy
 * counter's delta with integrated power over a few seconds, and reads/writes/restores the power
 * limit. Prints one JSON document. Ratios are against its floor, the TIME signal read in the same
 * run (the cost of any PlatformIO.readSignal, no device call).
 * With JOULEGATE_NVML_LIB pointing at test/fakes' library it runs anywhere (a dry run).
 */
import { loadPlatform } from '../src/backends/load.js';
import { DomainType } from '../src/platform/domains.js';
import { errorMessage } from '../src/platform/errors.js';
import type { PlatformIO } from '../src/platform/platform-io.js';

const READS = 10;
const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf('--seconds') + 1] ?? 3) || 3;
const write = !args.includes('--no-write');
const GPU = DomainType.Gpu;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowS = () => performance.now() / 1000;

/** Mean microseconds per single read of `name`, and the values seen. */
async function timeReads(pio: PlatformIO, name: string, domain: DomainType, idx: number) {
  const values: number[] = [];
  const errors: string[] = [];
  await pio.readSignal(name, domain, idx).catch(() => undefined); // warm-up, not timed
  const t0 = performance.now();
  for (let i = 0; i < READS; i++) {
    try {
      values.push(await pio.readSignal(name, domain, idx));
    } catch (err) {
      errors.push(errorMessage(err));
    }
  }
  const usPerRead = ((performance.now() - t0) * 1000) / READS;
  return { values, errors: [...new Set(errors)], usPerRead };
}

/** Energy delta of the counter vs the trapezoidal integral of GPU_POWER, sampled every 50 ms. */
async function energyVsPower(pio: PlatformIO, gpu: number) {
  const p = pio.pushSignal('GPU_POWER', GPU, gpu);
  const e = pio.pushSignal('GPU_ENERGY', GPU, gpu);
  const samples: { t: number; power: number; energy: number }[] = [];
  const end = nowS() + seconds;
  while (nowS() < end) {
    await pio.readBatch();
    samples.push({ t: nowS(), power: pio.sample(p), energy: pio.sample(e) });
    await sleep(50);
  }
  let integrated = 0;
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    integrated += ((a.power + b.power) / 2) * (b.t - a.t);
  }
  const counter = samples[samples.length - 1]!.energy - samples[0]!.energy;
  return {
    samples: samples.length,
    counterJoules: counter,
    integratedJoules: integrated,
    ratioCounterToIntegrated: counter / integrated,
    note: 'GPU_POWER is a ~1 s average on Ampere and newer: expect a lag at load changes',
  };
}

async function powerLimitRoundTrip(pio: PlatformIO, gpu: number) {
  const name = 'GPU_POWER_LIMIT_CONTROL';
  const original = await pio.readSignal(name, GPU, gpu);
  const min = await pio.readSignal('GPU_POWER_LIMIT_MIN_AVAIL', GPU, gpu);
  const target = Math.max(min, Math.round(original * 0.9));
  const result: Record<string, unknown> = { original, target };
  try {
    await pio.writeControl(name, GPU, gpu, target);
    result.readBack = await pio.readSignal(name, GPU, gpu);
  } catch (err) {
    result.writeError = errorMessage(err);
  } finally {
    await pio.writeControl(name, GPU, gpu, original).catch((err) => {
      result.restoreError = errorMessage(err);
    });
    result.restored = await pio.readSignal(name, GPU, gpu);
  }
  return result;
}

async function main(): Promise<void> {
  // Three platforms: one for single reads, one per batch experiment (pushes are fixed per PlatformIO).
  const pio = await loadPlatform({ include: (n) => n === 'NVML' || n === 'TIME' });
  const nvml = pio.loadedBackends().find((b) => b.name === 'NVML');
  const report: Record<string, unknown> = { diagnostics: pio.diagnostics() };
  if (!nvml) {
    // No NVIDIA GPU here: say so and why; nothing was measured.
    report.skipped = 'NVML backend not loaded (see diagnostics)';
    console.log(JSON.stringify(report, null, 2));
    await pio.close();
    return;
  }
  report.metadata = nvml.metadata();
  const baseline = await timeReads(pio, 'TIME', DomainType.Board, 0);
  // Not the same work as an NVML read (no device call): the cost every single read pays.
  report.floor = { name: 'PlatformIO.readSignal("TIME", board, 0)', usPerRead: baseline.usPerRead };
  const gpus = pio.topology.numDomain(GPU);
  const signals = nvml.signalNames().filter((n) => n.startsWith('NVML::'));
  const reads: Record<string, unknown>[] = [];
  for (let gpu = 0; gpu < gpus; gpu++) {
    for (const name of signals) {
      if (!pio.isValidSignal(name)) continue;
      const r = await timeReads(pio, name, GPU, gpu);
      reads.push({
        gpu,
        name,
        min: Math.min(...r.values),
        max: Math.max(...r.values),
        reads: r.values.length,
        errors: r.errors,
        usPerRead: r.usPerRead,
        ratioVsTimeRead: r.usPerRead / baseline.usPerRead,
      });
    }
  }
  report.reads = reads;
  const energy: Record<string, unknown>[] = [];
  for (let gpu = 0; gpu < gpus; gpu++) {
    const batch = await loadPlatform({ include: (n) => n === 'NVML' });
    try {
      energy.push({ gpu, ...(await energyVsPower(batch, gpu)) });
    } catch (err) {
      energy.push({ gpu, error: errorMessage(err) });
    } finally {
      await batch.close();
    }
  }
  report.energyVsPower = energy;
  if (write) {
    const limits: Record<string, unknown>[] = [];
    for (let gpu = 0; gpu < gpus; gpu++) {
      try {
        limits.push({ gpu, ...(await powerLimitRoundTrip(pio, gpu)) });
      } catch (err) {
        limits.push({ gpu, error: errorMessage(err) });
      }
    }
    report.powerLimit = limits;
  }
  await pio.close();
  console.log(JSON.stringify(report, null, 2));
}

await main();
