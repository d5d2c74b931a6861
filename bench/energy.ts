/**
 * Cost of one PlatformIO readBatch of every energy signal on the 2-socket Intel fixture
 * (POWERCAP: package, core, uncore, dram per socket, psys, MMIO: 10 energy_uj files), against
 * its floor measured in the same run: the same 10 files kept open and read with one pread each
 * at offset 0, parsed and converted to joules — what any reader must at least do, done the
 * plainest fast way.
 * Prints JSON: mean/p50/p99 µs per batch for both, and the ratios (joulegate / floor).
 * Usage: node --import tsx bench/energy.ts [--iterations N]
 */
import { closeSync, cpSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
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
const fds: number[] = [];
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
  for (const z of files) fds.push(openSync(sysroot.path(`${z.dir}/energy_uj`), 'r'));
  const text = Buffer.allocUnsafe(64);

  let joulegateSum = 0;
  let floorSum = 0;
  const timeBatch = async () => {
    const t0 = performance.now();
    await pio.readBatch();
    let sum = 0;
    for (const h of handles) sum += pio.sample(h);
    const us = (performance.now() - t0) * 1000;
    joulegateSum = sum;
    return us;
  };
  const timeFloor = () => {
    const t0 = performance.now();
    let sum = 0;
    for (const fd of fds) sum += Number(text.toString('latin1', 0, readSync(fd, text, 0, 64, 0))) / 1e6;
    const us = (performance.now() - t0) * 1000;
    floorSum = sum;
    return us;
  };
  for (let w = 0; w < WARMUP; w++) {
    await timeBatch();
    timeFloor();
  }
  const joulegate: number[] = [];
  const floor: number[] = [];
  // Interleaved rounds so both see the same machine load.
  for (let r = 0; r < ROUNDS; r++) {
    for (let n = 0; n < ITERATIONS / ROUNDS; n++) joulegate.push(await timeBatch());
    for (let n = 0; n < ITERATIONS / ROUNDS; n++) floor.push(timeFloor());
  }
  await pio.close();
  // The fixture's counters stand still, so both must have read the same joules.
  if (!(floorSum > 0) || Math.abs(joulegateSum - floorSum) > 1e-9 * floorSum) {
    throw new Error(`joulegate read ${joulegateSum} J in all, the floor ${floorSum} J`);
  }
  const jg = stats(joulegate);
  const base = stats(floor);
  console.log(
    JSON.stringify(
      {
        bench: 'energy-readBatch',
        fixture: 'intel-2s',
        signals: handles.length,
        files: fds.length,
        iterations: ITERATIONS,
        floor: { name: 'pread at offset 0 of each energy_uj kept open, Number() / 1e6', ...base },
        joulegate: { name: 'PlatformIO.readBatch() + sample() of every energy signal', ...jg },
        ratio_mean_vs_floor: Number((jg.mean_us / base.mean_us).toFixed(3)),
        ratio_p50_vs_floor: Number((jg.p50_us / base.p50_us).toFixed(3)),
        joules_read: Number(joulegateSum.toFixed(6)),
      },
      null,
      1,
    ),
  );
} finally {
  for (const fd of fds) closeSync(fd);
  rmSync(root, { recursive: true, force: true });
}
