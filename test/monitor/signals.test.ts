import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clockMs } from '../../src/monitor/clock.js';
import { Sampler, SamplingLoop } from '../../src/monitor/sampler.js';
import { NO_FILTERS, selectSeries } from '../../src/monitor/signals.js';
import { Aggregation } from '../../src/platform/aggregation.js';
import type { BackendContext } from '../../src/platform/backend.js';
import { DomainType } from '../../src/platform/domains.js';
import { FormatType } from '../../src/platform/format.js';
import { PlatformIO } from '../../src/platform/platform-io.js';
import { Behavior, Units } from '../../src/platform/signal-info.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { type SignalDef, TableBackend } from '../../src/platform/table-backend.js';
import { loadTopology } from '../../src/platform/topology.js';
import { FIXTURES } from '../helpers/tmp.js';
import { waitFor } from '../service/harness.js';

/** A scripted backend: per-package energy that a test sets, a GPU power, a mislabeled signal. */
class ScriptedBackend extends TableBackend<number> {
  readonly id = 'scripted';
  readonly name = 'SCRIPTED';
  readonly description = 'values set by the test';
  energy = [0, 0];
  failNext = false;

  protected snapshot(): number {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('device busy');
    }
    return 0;
  }

  protected define(_ctx: BackendContext): { signals: SignalDef<number>[] } {
    const base = { aggregation: Aggregation.Sum, format: FormatType.Double, behavior: Behavior.Monotone };
    return {
      signals: [
        {
          ...base,
          name: 'PKG_ENERGY',
          aliases: ['CPU_ENERGY'],
          description: 'package energy',
          domain: DomainType.Package,
          units: Units.Joules,
          read: (idx) => this.energy[idx]!,
        },
        {
          ...base,
          name: 'GPU_POWER',
          aliases: ['DRAM_ENERGY'],
          description: 'declared in watts although named like an energy',
          domain: DomainType.Board,
          units: Units.Watts,
          read: () => 5,
        },
      ],
    };
  }
}

async function platform(): Promise<{ pio: PlatformIO; backend: ScriptedBackend }> {
  const sysroot = new Sysroot(`${FIXTURES}energy/amd-epyc`);
  const topology = loadTopology(sysroot);
  const pio = new PlatformIO(topology);
  const backend = new ScriptedBackend();
  await backend.setup({ sysroot, topology });
  pio.register(backend);
  return { pio, backend };
}

describe('signal selection', () => {
  it('picks signals by name, units and domain from whatever PlatformIO offers', async () => {
    const { pio } = await platform();
    const { series, notes } = selectSeries(pio);
    assert.deepEqual(
      series.map((s) => [s.id, s.group, s.kind]),
      [
        ['CPU_ENERGY-package-0', 'cpu', 'energy'],
        ['CPU_ENERGY-package-1', 'cpu', 'energy'],
        // found by its low-level name: no GPU_POWER alias exists, SCRIPTED::GPU_POWER does
        ['SCRIPTED::GPU_POWER', 'gpu', 'power'],
      ],
    );
    assert.ok(notes.some((n) => /DRAM_ENERGY: skipped, units are not joules/.test(n)));
  });

  it('applies include/exclude regexes (prefix match; exclude wins)', async () => {
    const { pio } = await platform();
    const only1 = selectSeries(pio, { ...NO_FILTERS, excludeSensors: [/CPU_ENERGY-package-0/] });
    assert.deepEqual(
      only1.series.map((s) => s.id),
      ['CPU_ENERGY-package-1', 'SCRIPTED::GPU_POWER'],
    );
    const none = selectSeries(pio, { ...NO_FILTERS, excludeBackends: [/SCRIPTED/] });
    assert.equal(none.series.length, 0);
    const infix = selectSeries(pio, { ...NO_FILTERS, includeSensors: [/package-1/, /SCRIPTED::/] });
    assert.deepEqual(
      infix.series.map((s) => s.id),
      ['SCRIPTED::GPU_POWER'],
      'include is a prefix match like perun',
    );
  });
});

/** CXL-attached memory with its own energy sensor, outside what the platform's psys measures. */
class CxlBackend extends TableBackend<number> {
  readonly id = 'cxl';
  readonly name = 'CXL';
  readonly description = 'a memory expander with an energy counter';

  protected snapshot(): number {
    return 0;
  }

  protected define(_ctx: BackendContext): { signals: SignalDef<number>[] } {
    return {
      signals: [
        {
          name: 'MEM_ENERGY',
          aliases: ['DRAM_ENERGY'],
          description: 'energy of the expander card',
          domain: DomainType.Board,
          aggregation: Aggregation.Sum,
          format: FormatType.Double,
          behavior: Behavior.Monotone,
          units: Units.Joules,
          outsidePlatform: true,
          read: () => 1,
        },
      ],
    };
  }
}

describe('outside the platform', () => {
  it('GPUs, and any signal its backend marks so, are outside what a board sensor covers', async () => {
    const { pio } = await platform();
    const cxl = new CxlBackend();
    await cxl.setup({ sysroot: new Sysroot(`${FIXTURES}energy/amd-epyc`), topology: pio.topology });
    pio.register(cxl);
    assert.equal(pio.signalInfo('DRAM_ENERGY').outsidePlatform, true);
    const { series } = selectSeries(pio);
    assert.deepEqual(
      series.map((s) => [s.id, s.group, s.outsidePlatform === true]),
      [
        ['CPU_ENERGY-package-0', 'cpu', false],
        ['CPU_ENERGY-package-1', 'cpu', false],
        ['DRAM_ENERGY', 'ram', true],
        ['SCRIPTED::GPU_POWER', 'gpu', true],
      ],
    );
  });
});

describe('sampler', () => {
  it('records a failed batch as NaN gaps with the reason, and keeps sampling', async () => {
    const { pio, backend } = await platform();
    const { series } = selectSeries(pio);
    const sampler = new Sampler(pio, series);
    const data = {
      originMs: clockMs(),
      times: [] as number[],
      values: series.map(() => [] as number[]),
    };
    backend.energy = [1, 2];
    await sampler.read(data);
    backend.failNext = true;
    await sampler.read(data);
    backend.energy = [3, 5];
    await sampler.read(data);
    assert.deepEqual(data.values[0], [1, Number.NaN, 3]);
    assert.deepEqual(data.values[1], [2, Number.NaN, 5]);
    assert.match(sampler.errors.get('CPU_ENERGY-package-0')!, /device busy/);
    assert.ok(data.times[0]! < data.times[1]! && data.times[1]! < data.times[2]!);
  });

  it('samples on absolute deadlines and takes a final sample on stop', async () => {
    const { pio } = await platform();
    const { series } = selectSeries(pio);
    const data = {
      originMs: clockMs(),
      times: [] as number[],
      values: series.map(() => [] as number[]),
    };
    const loop = new SamplingLoop(new Sampler(pio, series), data, 20);
    await loop.start();
    // The start sample and two ticks, however long a busy machine takes to run them.
    assert.ok(await waitFor(() => data.times.length >= 3, 30_000, 10), 'the loop did not tick');
    await loop.stop();
    // start + at least one tick + final; the count is not asserted tightly (shared machine)
    assert.ok(data.times.length >= 3, `${data.times.length} samples`);
    const n = data.times.length;
    assert.equal(data.values[0]!.length, n);
    // The loop never samples ahead of its deadlines (start + k·period; a missed one is skipped,
    // not caught up in a burst): the m-th tick's read starts at least m periods after the start,
    // however late any tick ran (less the 2 ms a timer may fire early). Two ticks may be close
    // when the first of them ran late; a burst would put a tick whole periods ahead.
    for (let m = 1; m < n - 1; m++)
      assert.ok(data.times[m]! >= m * 0.02 - 0.002, `tick ${m} at ${data.times[m]} s: ahead of its deadline`);
  });
});
