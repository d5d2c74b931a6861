import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { PolledFile, preadThroughLibc } from '../../src/backends/polled-file.js';
import { Aggregation } from '../../src/platform/aggregation.js';
import type { BackendContext } from '../../src/platform/backend.js';
import { DomainType } from '../../src/platform/domains.js';
import { FormatType } from '../../src/platform/format.js';
import { PlatformIO } from '../../src/platform/platform-io.js';
import { Behavior, Units } from '../../src/platform/signal-info.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { type SignalDef, TableBackend } from '../../src/platform/table-backend.js';
import { loadTopology } from '../../src/platform/topology.js';
import { copyFixture, FIXTURES, tempDir } from '../helpers/tmp.js';

// What the batch server does once per sample: a batch read that stays synchronous when every
// backend reads synchronously, and sysfs numbers parsed from bytes read with one pread.

/** VALUE reads `value`; its snapshot is a promise when `waits`, and throws when `fails`. */
class Settable extends TableBackend<number> {
  readonly id: string;
  readonly description = 'a value the test sets';
  value = 0;
  fails = false;

  constructor(
    readonly name: string,
    private readonly waits: boolean,
  ) {
    super();
    this.id = name.toLowerCase();
  }

  protected snapshot(): number | Promise<number> {
    const take = () => {
      if (this.fails) throw new Error(`${this.name}: device gone`);
      return this.value;
    };
    return this.waits ? new Promise((resolve) => setImmediate(resolve)).then(take) : take();
  }

  protected define(_ctx: BackendContext): { signals: SignalDef<number>[] } {
    const signal = {
      name: 'VALUE',
      description: 'the value',
      domain: DomainType.Board,
      aggregation: Aggregation.Sum,
      format: FormatType.Double,
      behavior: Behavior.Variable,
      units: Units.None,
      read: (_idx: number, ctx: { current: number }) => ctx.current,
    };
    return { signals: [signal] };
  }
}

async function platform(...backends: Settable[]): Promise<PlatformIO> {
  const sysroot = new Sysroot(`${FIXTURES}energy/amd-epyc`);
  const topology = loadTopology(sysroot);
  const pio = new PlatformIO(topology);
  for (const b of backends) {
    await b.setup({ sysroot, topology });
    pio.register(b);
  }
  return pio;
}

describe('PlatformIO.readBatchNow', () => {
  it('returns no promise when every backend read synchronously, a promise when one waits', async () => {
    const now = new Settable('NOW', false);
    const pio = await platform(now);
    const h = pio.pushSignal('NOW::VALUE', DomainType.Board, 0);
    now.value = 3;
    assert.equal(pio.readBatchNow(), undefined);
    assert.equal(pio.sample(h), 3);
    now.value = 4;
    assert.equal(pio.readBatchNow(), undefined);
    assert.equal(pio.sample(h), 4, 'every batch reads afresh');

    const later = new Settable('LATER', true);
    const mixed = await platform(new Settable('NOW', false), later);
    const a = mixed.pushSignal('NOW::VALUE', DomainType.Board, 0);
    const b = mixed.pushSignal('LATER::VALUE', DomainType.Board, 0);
    later.value = 9;
    const pending = mixed.readBatchNow();
    assert.ok(pending instanceof Promise);
    await pending;
    assert.deepEqual([mixed.sample(a), mixed.sample(b)], [0, 9]);
  });

  it('a failing backend throws (synchronously, or by rejecting) while the others are read', async () => {
    const good = new Settable('GOOD', false);
    const bad = new Settable('BAD', false);
    const pio = await platform(good, bad);
    const g = pio.pushSignal('GOOD::VALUE', DomainType.Board, 0);
    const x = pio.pushSignal('BAD::VALUE', DomainType.Board, 0);
    good.value = 5;
    bad.fails = true;
    assert.throws(() => pio.readBatchNow(), /BAD: device gone/);
    assert.equal(pio.sample(g), 5);
    assert.ok(Number.isNaN(pio.sample(x)));
    assert.match(String(pio.sampleError(x)), /BAD: device gone/);

    const waiting = new Settable('WAITING', true);
    const both = await platform(new Settable('GOOD', false), waiting);
    const w = both.pushSignal('WAITING::VALUE', DomainType.Board, 0);
    waiting.fails = true;
    await assert.rejects(both.readBatchNow()!, /WAITING: device gone/);
    assert.ok(Number.isNaN(both.sample(w)));
    // readBatch() keeps its contract: always a promise, rejected on failure.
    await assert.rejects(both.readBatch(), /WAITING: device gone/);
    waiting.fails = false;
    waiting.value = 2;
    await both.readBatch();
    assert.equal(both.sample(w), 2);
  });
});

describe('PolledFile.readDecimal', () => {
  const cases: [string, number][] = [
    ['2400000\n', 2400000],
    ['  -40 \n', -40],
    ['0', 0],
    ['000123\n', 123],
    ['999999999999999\n', 999999999999999],
  ];
  const unparsed = ['<unknown>\n', '1.5\n', '', '\n', '-\n', '12 34\n', '1234567890123456\n', '+5\n'];

  const check = (dir: string) => {
    const path = join(dir, 'attr');
    const file = new PolledFile(path, '/sys/x/attr', 8); // small: long contents make it grow
    for (const [text, value] of cases) {
      writeFileSync(path, text);
      assert.equal(file.readDecimal(), value, JSON.stringify(text));
      assert.equal(file.lastText(), text);
    }
    for (const text of unparsed) {
      writeFileSync(path, text);
      assert.ok(Number.isNaN(file.readDecimal()), JSON.stringify(text));
      assert.equal(file.lastText(), text, 'the content is there for a full parse or a message');
    }
    assert.equal(file.read(), '+5\n');
    file.close();
    // A read that fails names the file and keeps the errno code.
    const directory = join(dir, 'subdir');
    mkdirSync(directory);
    const broken = new PolledFile(directory, '/sys/x/subdir');
    assert.throws(() => broken.readDecimal(), /^Error: \/sys\/x\/subdir: .*EISDIR/);
  };

  it("parses from the bytes through Node's fs, then through libc's pread (the batch server)", () => {
    check(tempDir());
    preadThroughLibc();
    check(tempDir());
  });
});

describe('cpufreq in a batch', () => {
  it('reads synchronously; a value that turns unreadable is NaN with its reason, then reads again', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await loadPlatform({ sysroot: new Sysroot(root), include: (n) => n === 'CPUFREQ' });
    const cur0 = pio.pushSignal('CPUFREQ::SCALING_CUR_FREQ', DomainType.Cpu, 0);
    const cur1 = pio.pushSignal('CPUFREQ::SCALING_CUR_FREQ', DomainType.Cpu, 1);
    const file = (policy: number) =>
      join(root, `sys/devices/system/cpu/cpufreq/policy${policy}/scaling_cur_freq`);
    writeFileSync(file(0), '1500000\n');
    writeFileSync(file(1), '1600000\n');
    assert.equal(pio.readBatchNow(), undefined);
    assert.deepEqual([pio.sample(cur0), pio.sample(cur1)], [1.5e9, 1.6e9]);
    writeFileSync(file(1), '<unknown>\n');
    assert.equal(pio.readBatchNow(), undefined);
    assert.equal(pio.sample(cur0), 1.5e9);
    assert.ok(Number.isNaN(pio.sample(cur1)));
    assert.match(
      String(pio.sampleError(cur1)),
      /policy1\/scaling_cur_freq: expected a number, found "<unknown>"/,
    );
    writeFileSync(file(1), '1700000\n');
    pio.readBatchNow();
    assert.equal(pio.sample(cur1), 1.7e9);
    assert.equal(pio.sampleError(cur1), undefined, 'the reused snapshot keeps no stale error');
    await pio.close();
  });
});
