import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LoopClock } from '../../../src/cli/session/loop.js';
import { checkReadArgs, periodCount, runSession, type SessionConfig } from '../../../src/cli/session/run.js';
import { Aggregation } from '../../../src/platform/aggregation.js';
import type { BackendContext } from '../../../src/platform/backend.js';
import { DomainType } from '../../../src/platform/domains.js';
import { FormatType } from '../../../src/platform/format.js';
import { PlatformIO } from '../../../src/platform/platform-io.js';
import { Behavior, Units } from '../../../src/platform/signal-info.js';
import { Sysroot } from '../../../src/platform/sysroot.js';
import { type SignalDef, TableBackend } from '../../../src/platform/table-backend.js';
import { Topology } from '../../../src/platform/topology.js';

/**
 * A backend whose counter advances by 10 per snapshot per cpu: its RATE signal is NaN on the
 * first batch (no previous snapshot), like CPU_POWER, which is what the re-read rule is for.
 */
class CounterBackend extends TableBackend<number> {
  readonly id = 'counter';
  readonly name = 'COUNTER';
  readonly description = 'test counter';
  snapshots = 0;
  protected snapshot(): number {
    this.snapshots++;
    return this.snapshots * 10;
  }
  protected define(_ctx: BackendContext): { signals: SignalDef<number>[] } {
    const spec = {
      domain: DomainType.Cpu,
      aggregation: Aggregation.Sum,
      behavior: Behavior.Monotone,
      units: Units.None,
    };
    return {
      signals: [
        {
          ...spec,
          name: 'TOTAL',
          domain: DomainType.Board,
          description: 'total',
          format: FormatType.Integer,
          read: (_i, c) => c.current,
        },
        {
          ...spec,
          name: 'COUNT',
          description: 'count',
          format: FormatType.Integer,
          read: (_i, c) => c.current,
        },
        {
          ...spec,
          name: 'RATE',
          description: 'count per snapshot',
          format: FormatType.Double,
          rate: true,
          read: (_i, c) => c.current - c.previous!,
        },
      ],
    };
  }
}

async function platform(): Promise<{ pio: PlatformIO; backend: CounterBackend }> {
  const topology = new Topology({
    cpus: [0, 1, 2, 3].map((cpu) => ({ cpu, packageId: cpu >> 1, coreId: cpu & 1 })),
    numa: [],
  });
  const pio = new PlatformIO(topology);
  const backend = new CounterBackend();
  await backend.setup({ sysroot: new Sysroot('/nonexistent'), topology });
  pio.register(backend);
  return { pio, backend };
}

function manualClock(): LoopClock & { t: number } {
  const clock = {
    t: 0,
    now: () => clock.t,
    sleep: async (s: number) => {
      clock.t += s;
    },
  };
  return clock;
}

const base: SessionConfig = { time: 0, period: 0, printHeader: true, delimiter: ',', reportFormat: 'yaml' };

test('a NaN first sample is re-read once before the first row is printed', async () => {
  const { pio, backend } = await platform();
  let trace = '';
  const rows = await runSession(
    { ...base, time: 0.2, period: 0.1 },
    {
      pio,
      requestLines: ['COUNTER::RATE package 1', 'COUNTER::COUNT cpu *'],
      sinks: { trace: (t) => (trace += t) },
      host: 'h',
      clock: manualClock(),
    },
  );
  assert.equal(rows, 3);
  assert.equal(
    trace,
    '"COUNTER::RATE-package-1","COUNTER::COUNT-cpu-0","COUNTER::COUNT-cpu-1","COUNTER::COUNT-cpu-2","COUNTER::COUNT-cpu-3"\n' +
      // RATE sums two cpus' increments of 10; COUNT is the counter after each batch
      '20,20,20,20,20\n20,30,30,30,30\n20,40,40,40,40\n',
  );
  assert.equal(backend.snapshots, 4, 'one extra batch for the NaN first sample');
});

test('no re-read when the first sample has values; report alone when the trace is off', async () => {
  const { pio, backend } = await platform();
  const reports: string[] = [];
  await runSession(base, {
    pio,
    requestLines: ['COUNTER::COUNT board 0'],
    sinks: { report: (t) => reports.push(t) },
    host: 'node9',
    clock: manualClock(),
    wallClock: () => 'WALL',
  });
  assert.equal(backend.snapshots, 1);
  assert.equal(reports.length, 1);
  assert.match(
    reports[0]!,
    /^host: "node9"\nsample-time-first: "WALL"\nsample-time-total: 0\nsample-count: 1\n/,
  );
  assert.match(reports[0]!, /\n {2}COUNTER::COUNT:\n {4}count: 1\n {4}first: 40\n/);
});

test('--pid: runs without a time limit until the pid check fails', async () => {
  const { pio } = await platform();
  let checks = 0;
  const rows = await runSession(
    { ...base, period: 1, pid: 4242 },
    {
      pio,
      requestLines: ['COUNTER::COUNT cpu 0'],
      sinks: {},
      host: 'h',
      clock: manualClock(),
      isAlive: (pid) => {
        assert.equal(pid, 4242);
        return ++checks < 7;
      },
    },
  );
  assert.equal(rows, 7);
});

test('YAML reports every N periods are separated by ---', async () => {
  const { pio } = await platform();
  let out = '';
  await runSession(
    { ...base, time: 0.4, period: 0.1, reportSamples: 2 },
    {
      pio,
      requestLines: ['COUNTER::COUNT cpu 0'],
      sinks: { report: (t) => (out += t) },
      host: 'h',
      clock: manualClock(),
    },
  );
  const docs = out.split('\n---\n\n');
  assert.deepEqual(
    docs.map((d) => /sample-count: (\d+)/.exec(d)![1]),
    ['3', '2'],
  );
});

test('push failures name the request and the reason', async () => {
  const { pio } = await platform();
  await assert.rejects(
    runSession(base, {
      pio,
      requestLines: ['COUNTER::COUNT gpu_chip *', 'COUNTER::TOTAL package 0'],
      sinks: {},
      host: 'h',
    }),
    /Unable to push "COUNTER::TOTAL package 0"\. Reason: .*native domain board is not within package/,
  );
});

test('period checks keep geopmsession order and count', () => {
  const msg = (c: Partial<SessionConfig>) => {
    try {
      checkReadArgs({ ...base, ...c });
      return 'ok';
    } catch (e) {
      return (e as Error).message;
    }
  };
  assert.equal(msg({ time: 1, period: 0.1 }), 'ok');
  assert.equal(msg({ time: 0, period: 0.5, pid: 7 }), 'ok');
  assert.equal(msg({ time: 1, period: 2 }), 'Specified a period that is greater than the total run time');
  // GEOPM compares period with time first, so a negative time reads as "period too long".
  assert.equal(msg({ time: -1, period: 0 }), 'Specified a period that is greater than the total run time');
  assert.equal(msg({ time: 0, period: -1 }), 'Specified a negative run time or period');
  assert.equal(msg({ time: 1e6, period: 86401 }), 'Specified a period greater than 24 hours');
  assert.equal(msg({ reportSamples: -3 }), 'Specified report samples is negative');
  assert.equal(msg({ reportSamples: 0 }), 'Specified report samples is zero');
  assert.equal(periodCount({ ...base, time: 1, period: 0.1 }), 10);
  assert.equal(periodCount({ ...base, time: 0.3, period: 0.1 }), 3);
  assert.equal(periodCount({ ...base, time: 5, period: 0 }), 0);
  assert.equal(periodCount({ ...base, time: 0, period: 1, pid: 3 }), undefined);
  assert.equal(periodCount({ ...base, time: 2, period: 1, pid: 3 }), 2);
});
