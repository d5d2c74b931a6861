import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { NAN_READ, Sampler, whyNoValue } from '../../src/monitor/sampler.js';
import { selectSeries } from '../../src/monitor/signals.js';
import type { SampleSet } from '../../src/platform/sample-set.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { copyFixture } from '../helpers/tmp.js';

/** Adds `busy` user and `idle` idle ticks to every cpu line of the tree's /proc/stat. */
function tick(root: string, busy: number, idle: number): void {
  const path = join(root, 'proc/stat');
  const lines = readFileSync(path, 'utf8').split('\n');
  const text = lines.map((line) => {
    if (!line.startsWith('cpu')) return line;
    const f = line.split(/\s+/);
    const n = f[0] === 'cpu' ? 4 : 1;
    f[1] = String(Number(f[1]) + busy * n);
    f[4] = String(Number(f[4]) + idle * n);
    return f.join(' ');
  });
  writeFileSync(path, text.join('\n'));
}

describe('Sampler on PROCFS (fixture /proc)', () => {
  async function setUp() {
    const root = copyFixture('vm-1s4c');
    const pio = await loadPlatform({ sysroot: new Sysroot(root), include: (n) => n === 'PROCFS' });
    const series = selectSeries(pio).series;
    const failures: string[] = [];
    const sampler = new Sampler(pio, series, (id, reason) => failures.push(`${id}: ${reason}`));
    const data: SampleSet = { originMs: 0, times: [], values: series.map(() => []) };
    const util = series.findIndex((s) => s.group === 'cpu' && s.kind === 'util');
    const memory = series.findIndex((s) => s.kind === 'memory');
    assert.ok(util >= 0 && memory >= 0);
    return { root, pio, series, sampler, data, failures, util, memory };
  }

  it('utilisation before its first value (reads within one tick) is no failure; later ones keep it', async () => {
    const { root, pio, series, sampler, data, failures, util } = await setUp();
    for (let k = 0; k < 3; k++) await sampler.read(data);
    assert.ok(data.values[util]!.every(Number.isNaN));
    assert.deepEqual(failures, [], 'no value yet is not a failed read');
    assert.deepEqual(
      sampler.withoutValue().map((s) => s.id),
      [series[util]!.id],
    );
    // Asked why, it names the cause (the counters did not advance), not "NaN".
    assert.equal(await whyNoValue(pio, series[util]!), 'no CPU time elapsed on its counters between reads');
    tick(root, 1, 1);
    await sampler.read(data);
    // No tick between these two: the previous value stands.
    await sampler.read(data);
    // Stored in percent, the report's one convention for ratios (the signal gives 0.5).
    assert.deepEqual(data.values[util]!.slice(3), [50, 50]);
    assert.deepEqual(sampler.withoutValue(), []);
    assert.deepEqual(failures, []);
    await pio.close();
  });

  it('a failed read is told once, with the reason the batch read met (not "NaN")', async () => {
    const { root, pio, series, sampler, data, failures, util, memory } = await setUp();
    await sampler.read(data);
    writeFileSync(join(root, 'proc/meminfo'), 'MemFree: lots\n');
    writeFileSync(join(root, 'proc/stat'), 'cpu  1 2 oops 4\n');
    await sampler.read(data);
    await sampler.read(data);
    assert.ok(Number.isFinite(data.values[memory]![0]!));
    assert.ok(Number.isNaN(data.values[memory]![1]!) && Number.isNaN(data.values[util]![2]!));
    assert.equal(failures.length, 2, failures.join('\n'));
    assert.match(failures.find((f) => f.startsWith(series[memory]!.id))!, /meminfo/);
    assert.match(failures.find((f) => f.startsWith(series[util]!.id))!, /\/proc\/stat: bad number/);
    assert.ok(!failures.some((f) => f.includes(NAN_READ)));
    // A single read names the same cause.
    assert.match(await whyNoValue(pio, series[util]!), /^\/proc\/stat: bad number/);
    await pio.close();
  });
});

describe('Sampler on POWERCAP (fixture RAPL)', () => {
  it('a garbled energy_uj is logged with the parse error, not "read returned NaN"', async () => {
    const root = copyFixture('energy/amd-epyc');
    const pio = await loadPlatform({ sysroot: new Sysroot(root), include: (n) => n === 'POWERCAP' });
    const series = selectSeries(pio).series;
    const failures: string[] = [];
    const sampler = new Sampler(pio, series, (id, reason) => failures.push(`${id}: ${reason}`));
    const data: SampleSet = { originMs: 0, times: [], values: series.map(() => []) };
    await sampler.read(data);
    writeFileSync(join(root, 'sys/class/powercap/intel-rapl:0/energy_uj'), 'garbage\n');
    await sampler.read(data);
    const i = series.findIndex((s) => s.id === 'CPU_ENERGY-package-0');
    assert.ok(Number.isNaN(data.values[i]![1]!), 'a failed read is NaN, never 0');
    assert.deepEqual(failures, [
      'CPU_ENERGY-package-0: /sys/class/powercap/intel-rapl:0/energy_uj: expected an unsigned integer, found "garbage"',
    ]);
    assert.ok(Number.isFinite(data.values[series.findIndex((s) => s.id === 'CPU_ENERGY-package-1')]![1]!));
    await pio.close();
  });
});
