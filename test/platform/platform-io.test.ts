import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { Aggregation } from '../../src/platform/aggregation.js';
import type { BackendContext } from '../../src/platform/backend.js';
import { DomainType } from '../../src/platform/domains.js';
import { FormatType } from '../../src/platform/format.js';
import { Behavior, Units } from '../../src/platform/signal-info.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { type ControlDef, TableBackend } from '../../src/platform/table-backend.js';
import { copyFixture, FIXTURES, tempDir } from '../helpers/tmp.js';

/**
 * A test backend of in-memory knobs (no hardware involved: it exercises PlatformIO's own
 * rules). POWER is sum-aggregated (split over CPUs), LIMIT average (copied to each CPU).
 * `stuck` makes every write fail, to test restore continuing past a failing backend.
 */
class KnobBackend extends TableBackend<null> {
  readonly id: string;
  readonly name: string;
  readonly description = 'in-memory knobs for tests';
  readonly settings = new Map<string, number>();

  constructor(
    name: string,
    private readonly stuck = false,
  ) {
    super();
    this.name = name;
    this.id = name.toLowerCase();
  }

  protected snapshot(): null {
    return null;
  }

  protected define(_ctx: BackendContext): { signals: []; controls: ControlDef<null>[] } {
    const knob = (name: string, aggregation: Aggregation): ControlDef<null> => ({
      name,
      description: `test knob ${name}`,
      domain: DomainType.Cpu,
      aggregation,
      format: FormatType.Double,
      behavior: Behavior.Variable,
      units: Units.Watts,
      read: (idx) => this.settings.get(`${name}:${idx}`) ?? 0,
      write: (idx, value) => {
        if (this.stuck) throw new Error(`${name} is stuck`);
        this.settings.set(`${name}:${idx}`, value);
      },
    });
    return { signals: [], controls: [knob('POWER', Aggregation.Sum), knob('LIMIT', Aggregation.Average)] };
  }
}

const SERVER = `${FIXTURES}server-2s4c2t`;
const load = (root = SERVER, extra: TableBackend<null>[] = [], names = ['TIME', 'PROCFS']) =>
  loadPlatform({ sysroot: new Sysroot(root), include: (n) => names.includes(n), extra });

describe('PlatformIO batch rules', () => {
  it('rejects sample() before readBatch(), pushes after readBatch(), adjust(NaN), bad handles', async () => {
    const pio = await load();
    const h = pio.pushSignal('TIME', DomainType.Board, 0);
    assert.throws(() => pio.sample(h), /sample\(\) called before readBatch\(\)/);
    await pio.readBatch();
    assert.ok(pio.sample(h) >= 0);
    assert.throws(
      () => pio.pushSignal('PROCFS::MEMORY_USED', DomainType.Board, 0),
      /cannot push a signal after readBatch/,
    );
    assert.throws(() => pio.sample(99), /invalid signal handle 99/);
    await pio.close();

    const knobs = new KnobBackend('KNOBS');
    const pio2 = await load(SERVER, [knobs]);
    const c = pio2.pushControl('KNOBS::LIMIT', DomainType.Cpu, 0);
    assert.throws(() => pio2.adjust(c, Number.NaN), /cannot adjust a control to NaN/);
    assert.throws(() => pio2.adjust(c, Number.POSITIVE_INFINITY), /cannot adjust a control to Infinity/);
    assert.throws(() => pio2.adjust(c, Number.NEGATIVE_INFINITY), /cannot adjust a control to -Infinity/);
    pio2.adjust(c, 5);
    assert.throws(() => pio2.pushControl('KNOBS::POWER', DomainType.Cpu, 0), /cannot push a control after/);
    assert.throws(() => pio2.adjust(7, 1), /invalid control handle 7/);
  });

  it('still rejects sample() before readBatch() once a control was adjusted', async () => {
    const knobs = new KnobBackend('KNOBS');
    const pio = await load(SERVER, [knobs]);
    const s = pio.pushSignal('KNOBS::LIMIT', DomainType.Cpu, 0);
    const c = pio.pushControl('KNOBS::LIMIT', DomainType.Cpu, 0);
    pio.adjust(c, 3);
    assert.throws(() => pio.sample(s), /sample\(\) called before readBatch\(\)/);
    assert.throws(() => knobs.sample(0), /sample\(\) called before readBatch\(\)/);
    await pio.writeBatch();
    await pio.readBatch();
    assert.equal(pio.sample(s), 3);
  });

  it('applies the same rules in a TableBackend used directly', async () => {
    const pio = await load(SERVER, [], ['PROCFS']);
    const procfs = pio.loadedBackends()[0]!;
    const h = procfs.pushSignal('PROCFS::MEMORY_TOTAL', DomainType.Board, 0);
    assert.equal(
      procfs.pushSignal('PROCFS::MEMORY_TOTAL', DomainType.Board, 0),
      h,
      'same request, same handle',
    );
    assert.throws(() => procfs.sample(h), /sample\(\) called before readBatch\(\)/);
    await procfs.readBatch();
    assert.equal(procfs.sample(h), 32594688 * 1024);
    assert.equal(
      procfs.pushSignal('PROCFS::MEMORY_TOTAL', DomainType.Board, 0),
      h,
      'an existing request is still fine',
    );
    assert.throws(
      () => procfs.pushSignal('PROCFS::MEMORY_USED', DomainType.Board, 0),
      /cannot push a signal after readBatch/,
    );
    assert.throws(
      () => procfs.pushSignal('PROCFS::MEMORY_TOTAL', DomainType.Cpu, 0),
      /native domain is board, not cpu/,
    );
    assert.throws(() => procfs.sample(5), /invalid signal handle/);
    await pio.close();
  });

  it('refuses a domain finer than the native one and an unknown name', async () => {
    const pio = await load();
    assert.throws(
      () => pio.pushSignal('PROCFS::MEMORY_USED', DomainType.Cpu, 0),
      /native domain board is not within cpu/,
    );
    await assert.rejects(
      pio.readSignal('NO_SUCH_SIGNAL', DomainType.Board, 0),
      /no support for signal NO_SUCH_SIGNAL/,
    );
    await assert.rejects(pio.readSignal('TIME', DomainType.Package, 2), /out of range for package/);
    await pio.close();
  });
});

describe('PlatformIO control fan-out', () => {
  it('divides sum-aggregated controls over the CPUs of the domain and copies the others', async () => {
    const knobs = new KnobBackend('KNOBS');
    const pio = await load(SERVER, [knobs]);
    await pio.writeControl('KNOBS::POWER', DomainType.Package, 0, 80);
    await pio.writeControl('KNOBS::LIMIT', DomainType.Package, 1, 80);
    for (let cpu = 0; cpu < 16; cpu++) {
      assert.equal(knobs.settings.get(`POWER:${cpu}`), cpu % 2 === 0 ? 10 : undefined, `POWER at cpu ${cpu}`);
      assert.equal(knobs.settings.get(`LIMIT:${cpu}`), cpu % 2 === 1 ? 80 : undefined, `LIMIT at cpu ${cpu}`);
    }
    // Reading back at the package aggregates: the sum of the parts and the average of copies.
    assert.equal(await pio.readSignal('KNOBS::POWER', DomainType.Package, 0), 80);
    assert.equal(await pio.readSignal('KNOBS::LIMIT', DomainType.Package, 1), 80);
  });

  it('does the same through pushControl/adjust/writeBatch at core and board', async () => {
    const knobs = new KnobBackend('KNOBS');
    const pio = await load(SERVER, [knobs]);
    const power = pio.pushControl('KNOBS::POWER', DomainType.Core, 4);
    const limit = pio.pushControl('KNOBS::LIMIT', DomainType.Board, 0);
    pio.adjust(power, 30);
    pio.adjust(limit, 7);
    await pio.writeBatch();
    assert.equal(knobs.settings.get('POWER:1'), 15);
    assert.equal(knobs.settings.get('POWER:9'), 15);
    assert.equal(knobs.settings.get('POWER:0'), undefined);
    for (let cpu = 0; cpu < 16; cpu++) assert.equal(knobs.settings.get(`LIMIT:${cpu}`), 7);
  });
});

describe('PlatformIO requests sharing a native control', () => {
  it('refuses two requests giving one native control different settings in one batch', async () => {
    const knobs = new KnobBackend('KNOBS');
    const pio = await load(SERVER, [knobs]);
    // A duplicate request, and a package request that contains CPU 1 (package 1: odd CPUs).
    const first = pio.pushControl('KNOBS::LIMIT', DomainType.Cpu, 1);
    const again = pio.pushControl('KNOBS::LIMIT', DomainType.Cpu, 1);
    const pkg = pio.pushControl('KNOBS::LIMIT', DomainType.Package, 1);
    pio.adjust(first, 5);
    assert.throws(
      () => pio.adjust(again, 6),
      /^InvalidArgumentError: KNOBS::LIMIT cpu 1 and KNOBS::LIMIT cpu 1 set the same control to different values \(6, 5\) in one batch$/,
    );
    assert.throws(
      () => pio.adjust(pkg, 7),
      /KNOBS::LIMIT package 1 and KNOBS::LIMIT cpu 1 set the same control/,
    );
    // Agreeing requests are fine, and a request adjusted again replaces its own setting.
    pio.adjust(first, 7);
    pio.adjust(again, 7);
    pio.adjust(pkg, 7);
    await pio.writeBatch();
    assert.equal(knobs.settings.get('LIMIT:1'), 7);
    assert.equal(knobs.settings.get('LIMIT:3'), 7);
    // Each batch starts afresh: another request may now set it alone.
    pio.adjust(again, 9);
    await pio.writeBatch();
    assert.equal(knobs.settings.get('LIMIT:1'), 9);
    assert.equal(knobs.settings.get('LIMIT:3'), 7);
  });

  it('compares sum-aggregated settings per native control (a board value split over the CPUs)', async () => {
    const knobs = new KnobBackend('KNOBS');
    const pio = await load(SERVER, [knobs]);
    const board = pio.pushControl('KNOBS::POWER', DomainType.Board, 0);
    const cpu = pio.pushControl('KNOBS::POWER', DomainType.Cpu, 3);
    pio.adjust(board, 160); // 10 per CPU
    pio.adjust(cpu, 10);
    assert.throws(() => pio.adjust(cpu, 11), /set the same control to different values \(11, 10\)/);
    await pio.writeBatch();
    assert.equal(knobs.settings.get('POWER:3'), 10);
  });
});

describe('PlatformIO save and restore', () => {
  it('keeps restoring past a failing backend and reports every failure', async () => {
    const root = copyFixture('server-2s4c2t');
    const good = new KnobBackend('KNOBS');
    const stuck = new KnobBackend('AAA_STUCK', true);
    const pio = await load(root, [stuck, good], ['CPUFREQ']);
    await pio.writeControl('KNOBS::LIMIT', DomainType.Board, 0, 42);
    const dir = join(tempDir(), 'SAVE_FILES');
    await pio.saveControls(dir);
    for (const name of ['AAA_STUCK', 'KNOBS', 'CPUFREQ']) {
      assert.ok(readFileSync(join(dir, `${name}-save-control.json`), 'utf8').startsWith('['));
    }
    // Files for backends that are not loaded (sorted before and after the others) fail too.
    writeFileSync(join(dir, 'GONE-save-control.json'), '[]\n');
    writeFileSync(join(dir, 'ZZZ-save-control.json'), '[]\n');
    await pio.writeControl('KNOBS::LIMIT', DomainType.Board, 0, 1);
    await pio.writeControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Board, 0, 2e9);
    const err = await pio.restoreControls(dir).then(
      () => assert.fail('restore should report the stuck backend'),
      (e: Error) => e,
    );
    assert.match(err.message, /AAA_STUCK: failed to restore 32 setting\(s\): /);
    assert.match(err.message, /AAA_STUCK::LIMIT cpu 15: LIMIT is stuck/);
    assert.match(err.message, /GONE: backend not loaded/);
    assert.match(err.message, /ZZZ: backend not loaded/);
    // The backends after the failing one were restored all the same.
    for (let cpu = 0; cpu < 16; cpu++) assert.equal(good.settings.get(`LIMIT:${cpu}`), 42);
    assert.equal(
      Number(readFileSync(join(root, 'sys/devices/system/cpu/cpufreq/policy6/scaling_max_freq'), 'utf8')),
      3700000,
    );
    await pio.close();
  });

  it('fails a save that cannot read a control rather than leaving the setting out', async () => {
    const knobs = new KnobBackend('KNOBS');
    const pio = await load(SERVER, [knobs]);
    knobs.settings.set('LIMIT:5', Number.NaN);
    const dir = tempDir();
    await assert.rejects(pio.saveControls(dir), /KNOBS: cannot save KNOBS::LIMIT cpu 5/);
  });

  it('reports a garbled save file by name', async () => {
    const pio = await load(SERVER, [new KnobBackend('KNOBS')]);
    const dir = tempDir();
    writeFileSync(join(dir, 'KNOBS-save-control.json'), '{"name": 1}');
    await assert.rejects(pio.restoreControls(dir), /KNOBS-save-control\.json: expected a JSON array/);
    writeFileSync(join(dir, 'KNOBS-save-control.json'), '[{"name": "KNOBS::LIMIT"}]');
    await assert.rejects(
      pio.restoreControls(dir),
      /entry 0 is not \{name, domain_type, domain_idx, setting\}/,
    );
    await assert.rejects(
      pio.restoreControls(join(dir, 'missing')),
      /^JoulegateError: restore failed: cannot read the saved controls in .*missing: ENOENT/,
    );
  });
});
