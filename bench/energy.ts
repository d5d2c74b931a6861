/**
 * Cost of one PlatformIO readBatch of every energy signal on the 2-socket Intel fixture
 * (POWERCAP: package, core, uncore, dram per socket, psys, MMIO: 10 energy_uj files), against
 * a baseline measured in the same run: readFileSync + parse of the same 10 files.
 * Prints JSON: mean/p50/p99 µs per batch for both, and the ratios (joulegate / baseline).
 * Usage: node --import tsx bench/energy.ts [--iterations N]
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PowercapBackend } from '../src/backends/powercap/index.js';
import { PlatformIO } from '../src/platform/platform-io.js';
import { Sysroot } from '../src/platform/sysroot.js';
import { loadTopology } from '../src/platform/topology.js';

const i = process.argv.indexOf('--iterations');
const ITERATIONS = i >= 0 ? Number(process.argv[i + 1]) : 5000;
const WARMUP = 500;
const ROUNDS = 5;

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  const round = (x: number) => Number(x.toFixed(3));
  return { mean_us: round(mean), p50_us: round(at(0.5)), p99_us: round(at(0.99)) };
}

const root = mkdtempSync(join(tmpdir(), 'joulegate-bench-energy-'));
cpSync(new URL('../test/fixtures/energy/intel-2s', import.meta.url).pathname, root, { recursive: true });
try {
  const sysroot = new Sysroot(root);
  const topology = loadTopology(sysroot);
  const backend = new PowercapBackend();
  await backend.setup({ sysroot, topology });
  const pio = new PlatformIO(topology);
  pio.register(backend);
  const energySignals = pio.signalNames().filter((n) => n.startsWith('POWERCAP::') && n.endsWith('_ENERGY'));
  const handles: number[] = [];
  for (const name of energySignals) {
    const info = pio.signalInfo(name);
    for (let idx = 0; idx < topology.numDomain(info.domain); idx++) {
      try {
        handles.push(pio.pushSignal(name, info.domain, idx));
      } catch {
        // this zone kind does not exist at this index (psys on package, MMIO on socket 1)
      }
    }
  }
  const files = backend.metadata().zones as { dir: string }[];
  const paths = files.map((z) => sysroot.path(`${z.dir}/energy_uj`));

  const joulegate: number[] = [];
  const baseline: number[] = [];
  let sink = 0;
  const timeBatch = async () => {
    const t0 = performance.now();
    await pio.readBatch();
    for (const h of handles) sink += pio.sample(h);
    return (performance.now() - t0) * 1000;
  };
  const timeBaseline = () => {
    const t0 = performance.now();
    for (const p of paths) sink += Number(readFileSync(p, 'latin1').trim());
    return (performance.now() - t0) * 1000;
  };
  for (let w = 0; w < WARMUP; w++) {
    await timeBatch();
    timeBaseline();
  }
  // Interleaved rounds so both see the same machine load.
  for (let r = 0; r < ROUNDS; r++) {
    for (let n = 0; n < ITERATIONS / ROUNDS; n++) joulegate.push(await timeBatch());
    for (let n = 0; n < ITERATIONS / ROUNDS; n++) baseline.push(timeBaseline());
  }
  const jg = stats(joulegate);
  const base = stats(baseline);
  await pio.close();
  console.log(
    JSON.stringify(
      {
        bench: 'energy-readBatch',
        fixture: 'intel-2s',
        signals: handles.length,
        files: paths.length,
        iterations: ITERATIONS,
        joulegate_readBatch: jg,
        baseline_readFileSync: base,
        ratio_mean: Number((jg.mean_us / base.mean_us).toFixed(3)),
        ratio_p50: Number((jg.p50_us / base.p50_us).toFixed(3)),
        checksum: Number.isFinite(sink),
      },
      null,
      1,
    ),
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
