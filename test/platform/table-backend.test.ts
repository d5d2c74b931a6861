import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Aggregation } from '../../src/platform/aggregation.js';
import type { BackendContext } from '../../src/platform/backend.js';
import { DomainType } from '../../src/platform/domains.js';
import { ParseError } from '../../src/platform/errors.js';
import { FormatType } from '../../src/platform/format.js';
import { PlatformIO } from '../../src/platform/platform-io.js';
import { Behavior, Units } from '../../src/platform/signal-info.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { type SignalDef, TableBackend } from '../../src/platform/table-backend.js';
import { loadTopology } from '../../src/platform/topology.js';
import { FIXTURES } from '../helpers/tmp.js';

/**
 * A backend whose counter, clock and failures the test sets: COUNT is the counter, RATE its
 * change per second between batches (a rate signal), BROKEN throws what `error` says.
 */
class ScriptedCounter extends TableBackend<number> {
  readonly id: string;
  readonly description = 'a counter the test advances';
  count = 0;
  now = 0;
  error: Error | undefined;
  failBatch = false;

  constructor(readonly name: string) {
    super();
    this.id = name.toLowerCase();
  }

  protected override clockSeconds(): number {
    return this.now;
  }

  protected snapshot(): number {
    if (this.failBatch) throw new Error(`${this.name}: device gone`);
    return this.count;
  }

  protected define(_ctx: BackendContext): { signals: SignalDef<number>[] } {
    const base = {
      domain: DomainType.Board,
      aggregation: Aggregation.Sum,
      format: FormatType.Double,
      behavior: Behavior.Variable,
      units: Units.None,
    };
    return {
      signals: [
        { ...base, name: 'COUNT', description: 'the counter', read: (_i, c) => c.current },
        {
          ...base,
          name: 'RATE',
          description: 'counter change per second',
          rate: true,
          read: (_i, c) => (c.current - c.previous!) / c.elapsed,
        },
        {
          ...base,
          name: 'BROKEN',
          description: 'a read that fails as the test says',
          read: () => {
            if (this.error) throw this.error;
            return 1;
          },
        },
      ],
    };
  }
}

async function platform(...names: string[]) {
  const sysroot = new Sysroot(`${FIXTURES}energy/amd-epyc`);
  const topology = loadTopology(sysroot);
  const pio = new PlatformIO(topology);
  const backends = [];
  for (const name of names) {
    const b = new ScriptedCounter(name);
    await b.setup({ sysroot, topology });
    pio.register(b);
    backends.push(b);
  }
  return { pio, backends };
}

describe('batch reads keep why a value is missing', () => {
  it('a rate over a batch interval with no elapsed time has no new value yet: the last one stands', async () => {
    const { pio, backends } = await platform('ONE');
    const b = backends[0]!;
    const rate = pio.pushSignal('ONE::RATE', DomainType.Board, 0);
    await pio.readBatch();
    assert.ok(Number.isNaN(pio.sample(rate)), 'one snapshot: no rate yet');
    assert.equal(pio.sampleError(rate), undefined, 'and no failure');
    b.now = 2;
    b.count = 10;
    await pio.readBatch();
    assert.equal(pio.sample(rate), 5);
    b.count = 30; // the clock did not move: no interval to divide by
    await pio.readBatch();
    assert.equal(pio.sample(rate), 5);
    assert.equal(pio.sampleError(rate), undefined);
    b.now = 3;
    await pio.readBatch();
    assert.equal(pio.sample(rate), 20, 'measured from the last snapshot');
  });

  it('a read that throws is NaN with its error, until it reads again', async () => {
    const { pio, backends } = await platform('ONE');
    const b = backends[0]!;
    const broken = pio.pushSignal('ONE::BROKEN', DomainType.Board, 0);
    b.error = new ParseError('/sys/x/energy_uj: expected an unsigned integer, found "zz"');
    await pio.readBatch();
    assert.ok(Number.isNaN(pio.sample(broken)));
    assert.equal(pio.sampleError(broken), b.error);
    b.error = undefined;
    await pio.readBatch();
    assert.equal(pio.sample(broken), 1);
    assert.equal(pio.sampleError(broken), undefined);
  });

  it('one backend failing its batch leaves the others read; its signals are NaN with its error', async () => {
    const { pio, backends } = await platform('ONE', 'TWO');
    const [one, two] = backends as [ScriptedCounter, ScriptedCounter];
    const a = pio.pushSignal('ONE::COUNT', DomainType.Board, 0);
    const c = pio.pushSignal('TWO::COUNT', DomainType.Board, 0);
    one.count = 4;
    two.count = 7;
    two.failBatch = true;
    await assert.rejects(pio.readBatch(), /TWO: device gone/);
    assert.equal(pio.sample(a), 4);
    assert.ok(Number.isNaN(pio.sample(c)), 'not the value of an earlier batch');
    assert.match(pio.sampleError(c)!.message, /TWO: device gone/);
    two.failBatch = false;
    await pio.readBatch();
    assert.equal(pio.sample(c), 7);
    assert.equal(pio.sampleError(c), undefined);
  });
});
