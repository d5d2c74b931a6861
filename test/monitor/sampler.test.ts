import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { NAN_READ, Sampler, type SampleSet, whyNoValue } from '../../src/monitor/sampler.js';
import { selectSeries } from '../../src/monitor/signals.js';
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
    tick(root, 1, 1);
    await sampler.read(data);
    // No tick between these two: the previous value stands.
    await sampler.read(data);
    assert.deepEqual(data.values[util]!.slice(3), [0.5, 0.5]);
    assert.deepEqual(sampler.withoutValue(), []);
    assert.deepEqual(failures, []);
    await pio.close();
  });

  it('NaN after a value is a failure, told once; a series that never reads is explained', async () => {
    const { root, pio, series, sampler, data, failures, util, memory } = await setUp();
    await sampler.read(data);
    writeFileSync(join(root, 'proc/meminfo'), 'MemFree: lots\n');
    writeFileSync(join(root, 'proc/stat'), 'cpu  1 2 oops 4\n');
    await sampler.read(data);
    await sampler.read(data);
    assert.ok(Number.isFinite(data.values[memory]![0]!));
    assert.deepEqual(failures, [`${series[memory]!.id}: ${NAN_READ}`]);
    // The batch only says NaN; a single read names the cause.
    assert.match(await whyNoValue(pio, series[util]!), /^\/proc\/stat: bad number/);
    await pio.close();
  });
});
