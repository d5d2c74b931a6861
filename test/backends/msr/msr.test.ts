import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadPlatform } from '../../../src/backends/load.js';
import {
  decodeField,
  encodeField,
  extractBits,
  type FieldCodec,
  fieldWidth,
  insertBits,
} from '../../../src/backends/msr/field.js';
import { MsrBackend } from '../../../src/backends/msr/index.js';
import { parseMsrTable } from '../../../src/backends/msr/schema.js';
import { BUILTIN_TABLES, tableMatches } from '../../../src/backends/msr/tables.js';
import { DomainType } from '../../../src/platform/domains.js';
import { formatValue } from '../../../src/platform/format.js';
import { fixtureContext, platformWith, scriptedClock } from '../../helpers/backend-fixtures.js';
import { tempDir } from '../../helpers/tmp.js';
import { INTEL, MapMsrDevice, putMsr } from './helpers.js';

const { Board, Package, Cpu, Core } = DomainType;

/** Deterministic 64-bit patterns (xorshift) for the bit-manipulation properties. */
function* patterns(n: number): Generator<bigint> {
  let x = 0x9e3779b97f4a7c15n;
  for (let i = 0; i < n; i++) {
    x ^= (x << 13n) & 0xffffffffffffffffn;
    x ^= x >> 7n;
    x ^= (x << 17n) & 0xffffffffffffffffn;
    yield x;
  }
}

test('every writable field of the built-in tables round-trips encode/decode', () => {
  let checked = 0;
  for (const { name, data } of BUILTIN_TABLES) {
    const table = parseMsrTable(data, name);
    for (const [reg, r] of Object.entries(table.msrs)) {
      for (const [fname, f] of Object.entries(r.fields)) {
        if (!f.writeable) continue;
        // A unit register value typical of real parts stands in for units_from.
        const codec: FieldCodec = {
          beginBit: f.begin_bit,
          endBit: f.end_bit,
          fn: f.function,
          scale: f.units_from ? f.scalar * 2 ** -3 : f.scalar,
        };
        const width = fieldWidth(codec);
        const all =
          width <= 16
            ? [...Array(2 ** width).keys()].map(BigInt)
            : [...patterns(2000)].map((p) => p & ((1n << BigInt(width)) - 1n));
        for (const bits of all) {
          const value = decodeField(bits, codec);
          assert.equal(
            encodeField(value, codec, `${reg}:${fname}`),
            bits,
            `${reg}:${fname} bits ${bits} → ${value}`,
          );
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 1000);
});

test('read-modify-write changes only the field bits', () => {
  const fields = [
    { beginBit: 0, endBit: 14 },
    { beginBit: 15, endBit: 15 },
    { beginBit: 17, endBit: 23 },
    { beginBit: 49, endBit: 55 },
    { beginBit: 63, endBit: 63 },
    { beginBit: 0, endBit: 63 },
  ];
  const values = [...patterns(300)];
  for (const f of fields) {
    const width = BigInt(fieldWidth(f));
    const fieldMask = ((1n << width) - 1n) << BigInt(f.beginBit);
    for (const [i, reg] of values.entries()) {
      const bits = values[(i + 1) % values.length]! & ((1n << width) - 1n);
      const after = insertBits(reg, f, bits);
      assert.equal(after & ~fieldMask & 0xffffffffffffffffn, reg & ~fieldMask & 0xffffffffffffffffn);
      assert.equal(extractBits(after, f), bits);
    }
  }
  assert.throws(() => insertBits(0n, { beginBit: 0, endBit: 3 }, 16n), /does not fit in 4 bits/);
});

test('encoding refuses values a field cannot hold', () => {
  const pl1: FieldCodec = { beginBit: 0, endBit: 14, fn: 'scale', scale: 0.125 };
  assert.throws(
    () => encodeField(5000, pl1, 'PL1'),
    /PL1: 5000 is outside what the 15-bit field holds \(0\.\.4095\.875\); nothing written/,
  );
  assert.throws(() => encodeField(-1, pl1, 'PL1'), /outside/);
  // 1e308 / 0.125 overflows to Infinity: still a range refusal, not a JavaScript BigInt error.
  assert.throws(
    () => encodeField(1e308, pl1, 'PL1'),
    (err: Error) => {
      assert.equal(err.name, 'InvalidArgumentError');
      assert.match(err.message, /PL1: 1e\+308 is outside what the 15-bit field holds/);
      return true;
    },
  );
  const tw: FieldCodec = { beginBit: 17, endBit: 23, fn: '7_bit_float', scale: 2 ** -10 };
  assert.equal(decodeField(encodeField(1, tw, 'TW'), tw), 1);
  assert.throws(() => encodeField(0, tw, 'TW'), /above 0/);
  assert.throws(() => encodeField(1e12, tw, 'TW'), /outside/);
});

test('tables are chosen by vendor, family and model', () => {
  const [intel, server, amd] = BUILTIN_TABLES.map((t) => parseMsrTable(t.data, t.name));
  const spr = { vendor: 'GenuineIntel', family: 6, model: 143 };
  const alderLake = { vendor: 'GenuineIntel', family: 6, model: 151 };
  assert.deepEqual(
    [intel, server, amd].map((t) => tableMatches(t!, spr)),
    [true, true, false],
  );
  assert.deepEqual(
    [intel, server, amd].map((t) => tableMatches(t!, alderLake)),
    [true, false, false],
  );
  assert.deepEqual(
    [intel, server, amd].map((t) => tableMatches(t!, { vendor: 'AuthenticAMD', family: 0x19, model: 17 })),
    [false, false, true],
  );
  assert.equal(tableMatches(amd!, { vendor: 'AuthenticAMD', family: 0x15 }), false);
});

test('tables are validated: unknown keys and dangling references are clear errors', () => {
  const bad = structuredClone(BUILTIN_TABLES[0]!.data) as {
    msrs: Record<string, { fields: Record<string, Record<string, unknown>> }>;
  };
  bad.msrs.PKG_POWER_LIMIT!.fields.PL1_POWER_LIMIT!.colour = 'red';
  assert.throws(
    () => parseMsrTable(bad, 'x.json'),
    /x\.json: invalid MSR table: msrs\.PKG_POWER_LIMIT\.fields\.PL1_POWER_LIMIT: Unrecognized key/,
  );
  const dangling = structuredClone(BUILTIN_TABLES[0]!.data) as { aliases: Record<string, string> };
  dangling.aliases.CPU_FOO = 'NO_SUCH_REG:FIELD';
  assert.throws(
    () => parseMsrTable(dangling, 'y.json'),
    /y\.json: unknown MSR field referenced by aliases\.CPU_FOO=NO_SUCH_REG:FIELD/,
  );
});

/** The Intel fixture with sparse MSR files holding registers at least 8 bytes apart. */
function intelWithMsrFiles() {
  const { root, ctx } = fixtureContext('intel-2s');
  for (let cpu = 0; cpu < 8; cpu++) {
    putMsr(root, cpu, 0x10, 1000n + BigInt(cpu));
    putMsr(root, cpu, 0x198, INTEL.PERF_STATUS);
    putMsr(root, cpu, 0x1a2, INTEL.TEMPERATURE_TARGET);
    putMsr(root, cpu, 0x1b1, INTEL.PACKAGE_THERM_STATUS);
    putMsr(root, cpu, 0x606, INTEL.RAPL_POWER_UNIT);
    putMsr(root, cpu, 0x611, INTEL.PKG_ENERGY_STATUS + BigInt(cpu));
    putMsr(root, cpu, 0x619, INTEL.DRAM_ENERGY_STATUS);
  }
  return { root, ctx };
}

test('Intel through sparse /dev/cpu/N/msr files: energy in joules, wraps, exact power, temperature', async () => {
  const { root, ctx } = intelWithMsrFiles();
  const c = scriptedClock();
  const pio = await platformWith(ctx, new MsrBackend({ clock: c.clock }));
  const unit = 2 ** -14;
  assert.equal(await pio.readSignal('CPU_ENERGY', Package, 1), Number(INTEL.PKG_ENERGY_STATUS + 4n) * unit);
  // Sapphire Rapids (model 143): DRAM counts in the fixed server unit 2^-16 J, not RAPL_POWER_UNIT's.
  assert.equal(await pio.readSignal('DRAM_ENERGY', Package, 0), Number(INTEL.DRAM_ENERGY_STATUS) * 2 ** -16);
  assert.equal(await pio.readSignal('CPU_PACKAGE_TEMPERATURE', Package, 0), 45);
  assert.equal(await pio.readSignal('CPU_FREQUENCY_STATUS', Cpu, 3), 2.9e9);
  assert.equal(
    formatValue(
      pio.signalInfo('MSR::TIME_STAMP_COUNTER#').format,
      await pio.readSignal('MSR::TIME_STAMP_COUNTER#', Cpu, 5),
    ),
    '0x00000000000003ed',
  );
  assert.equal(
    await pio.readSignal('CPU_TIMESTAMP_COUNTER', Cpu, 5),
    0,
    '64-bit counters count from their first reading',
  );
  assert.equal(await pio.readSignal('MSR::RAPL_POWER_UNIT:ENERGY', Package, 0), unit);
  assert.equal(
    formatValue(
      pio.signalInfo('MSR::RAPL_POWER_UNIT#').format,
      await pio.readSignal('MSR::RAPL_POWER_UNIT#', Package, 0),
    ),
    '0x00000000000a0e03',
  );

  const energy = pio.pushSignal('CPU_ENERGY', Package, 0);
  const power = pio.pushSignal('CPU_POWER', Package, 0);
  const counts = [0xfffff000n, 0x00000800n, 0x00004800n, 0xffffff00n, 0x100n]; // two 32-bit wraps
  const seconds = [0, 0.25, 0.5, 1, 2];
  const seen: [number, number][] = [];
  for (const [i, count] of counts.entries()) {
    putMsr(root, 0, 0x611, 0xabcd_0000_0000n | count); // upper bits are reserved: never counted
    c.now += seconds[i]!;
    await pio.readBatch();
    seen.push([pio.sample(energy), pio.sample(power)]);
  }
  const totalCounts = 0x1000n + 0x800n + 0x4000n + (0xffffff00n - 0x4800n) + 0x200n;
  assert.equal(seen[4]![0] - seen[0]![0], Number(totalCounts) * unit);
  assert.equal(seen[1]![1], (0x1800 * unit) / 0.25);
  assert.equal(seen[2]![1], (0x4000 * unit) / 0.5);
  assert.ok(Number.isNaN(seen[0]![1]));
});

test('adjacent registers through the device seam: PL1 read-modify-write, frequency, cycle counters', async () => {
  const { ctx } = fixtureContext('intel-2s');
  const dev = new MapMsrDevice();
  for (let cpu = 0; cpu < 8; cpu++) {
    dev.set(cpu, 0x606, INTEL.RAPL_POWER_UNIT);
    dev.set(cpu, 0x610, INTEL.PKG_POWER_LIMIT | (1n << 63n));
    dev.set(cpu, 0x611, INTEL.PKG_ENERGY_STATUS);
    dev.set(cpu, 0x614, INTEL.PKG_POWER_INFO);
    dev.set(cpu, 0x198, INTEL.PERF_STATUS);
    dev.set(cpu, 0x199, 0xdead_0000_1a00n);
    dev.set(cpu, 0xe7, 0xffff_ffff_ffff_fff0n);
    dev.set(cpu, 0xe8, 0xffff_ffff_ffff_ff00n);
  }
  const pio = await platformWith(ctx, new MsrBackend({ device: dev }));
  assert.equal(await pio.readSignal('CPU_POWER_LIMIT_CONTROL', Package, 0), 165);
  assert.equal(await pio.readSignal('CPU_POWER_TIME_WINDOW_CONTROL', Package, 0), 1);
  assert.equal(await pio.readSignal('CPU_POWER_LIMIT_DEFAULT', Package, 0), 165);
  assert.equal(await pio.readSignal('CPU_POWER_MAX_AVAIL', Package, 0), 330);
  await pio.writeControl('CPU_POWER_LIMIT_CONTROL', Package, 0, 150);
  const after = dev.get(0, 0x610)!;
  assert.equal(after & 0x7fffn, 1200n); // 150 W / (1/8 W)
  assert.equal(after & ~0x7fffn, (INTEL.PKG_POWER_LIMIT | (1n << 63n)) & ~0x7fffn, 'other bits untouched');
  assert.equal(dev.get(0, 0x611), INTEL.PKG_ENERGY_STATUS, 'neighbour register untouched');
  assert.equal(dev.get(4, 0x610), INTEL.PKG_POWER_LIMIT | (1n << 63n), 'other package untouched');
  assert.equal(await pio.readSignal('CPU_POWER_LIMIT_CONTROL', Package, 0), 150);

  const writes = dev.writes;
  await assert.rejects(pio.writeControl('CPU_POWER_LIMIT_CONTROL', Package, 0, 5000), /nothing written/);
  await assert.rejects(
    pio.writeControl('MSR::PKG_POWER_LIMIT:PL1_LIMIT_ENABLE', Package, 0, 2),
    /nothing written/,
  );
  assert.equal(dev.writes, writes);
  assert.equal(pio.isValidControl('MSR::PKG_POWER_LIMIT:LOCK'), false, 'LOCK is read-only');

  await pio.writeControl('CPU_FREQUENCY_MAX_CONTROL', Cpu, 2, 2.4e9);
  assert.equal(dev.get(2, 0x199), 0xdead_0000_1800n);
  assert.equal(dev.get(2, 0x198), INTEL.PERF_STATUS);

  // Save, change, restore through the backend's own save/restore.
  const save = tempDir();
  await pio.saveControls(save);
  await pio.writeControl('CPU_POWER_TIME_WINDOW_CONTROL', Package, 1, 0.5);
  assert.equal(await pio.readSignal('CPU_POWER_TIME_WINDOW_CONTROL', Package, 1), 0.5);
  await pio.restoreControls(save);
  assert.equal(await pio.readSignal('CPU_POWER_TIME_WINDOW_CONTROL', Package, 1), 1);
  assert.equal(dev.get(4, 0x610), INTEL.PKG_POWER_LIMIT | (1n << 63n));

  // 64-bit cycle counters wrap exactly.
  const aperf = pio.pushSignal('CPU_CYCLES_THREAD', Cpu, 1);
  const mperf = pio.pushSignal('CPU_CYCLES_REFERENCE', Cpu, 1);
  await pio.readBatch();
  const a0 = pio.sample(aperf);
  const m0 = pio.sample(mperf);
  dev.set(1, 0xe8, 0x300n);
  dev.set(1, 0xe7, 0x10n);
  await pio.readBatch();
  assert.equal(pio.sample(aperf) - a0, 0x400);
  assert.equal(pio.sample(mperf) - m0, 0x20);
  // A register that cannot be read is NaN in a batch, an error in a single read.
  dev.values.delete('1:232');
  await pio.readBatch();
  assert.ok(Number.isNaN(pio.sample(aperf)));
  await assert.rejects(pio.readSignal('CPU_CYCLES_THREAD', Cpu, 1), /MSR 0xe8 on CPU 1: EIO/);
});

test('AMD family 19h: unit register from a sparse file at 0xC0010299, energy through the seam', async () => {
  const { root, ctx } = fixtureContext('amd-epyc');
  putMsr(root, 0, 0xc0010299, 0x000a1003n);
  const fileBacked = await platformWith(ctx, new MsrBackend());
  assert.equal(await fileBacked.readSignal('MSR::RAPL_PWR_UNIT:ENERGY', Package, 0), 2 ** -16);

  const dev = new MapMsrDevice();
  const c = scriptedClock();
  for (let cpu = 0; cpu < 8; cpu++) {
    dev.set(cpu, 0xc0010299, 0x000a1003n);
    dev.set(cpu, 0xc001029a, 1000n * BigInt(cpu));
    dev.set(cpu, 0xc001029b, 0xffff0000n);
  }
  const pio = await platformWith(ctx, new MsrBackend({ device: dev, clock: c.clock }));
  assert.equal(await pio.readSignal('CPU_CORE_ENERGY', Core, 5), 5000 * 2 ** -16);
  const power = pio.pushSignal('CPU_POWER', Package, 1);
  await pio.readBatch();
  dev.set(4, 0xc001029b, 0x10000n); // wraps: 0x20000 counts
  c.now += 2;
  await pio.readBatch();
  assert.equal(pio.sample(power), (0x20000 * 2 ** -16) / 2);
});

test('admin tables in <configDir>/msr add registers; a bad file is reported, not fatal', async () => {
  const config = tempDir();
  mkdirSync(join(config, 'msr'));
  writeFileSync(
    join(config, 'msr/extra.json'),
    JSON.stringify({
      match: { vendor: 'GenuineIntel' },
      msrs: {
        PLATFORM_INFO: {
          offset: '0xCE',
          domain: 'package',
          fields: {
            MAX_NON_TURBO_RATIO: {
              begin_bit: 8,
              end_bit: 15,
              function: 'scale',
              units: 'hertz',
              scalar: 1e8,
              behavior: 'constant',
              writeable: false,
              aggregation: 'expect_same',
              description: 'Base frequency',
            },
          },
        },
      },
    }),
  );
  writeFileSync(
    join(config, 'msr/broken.json'),
    '{"match": {"vendor": "GenuineIntel"}, "msrs": {"X": {"offset": "610"}}}',
  );
  const { root, ctx } = fixtureContext('intel-2s', config);
  putMsr(root, 0, 0xce, 0x2000n);
  const b = new MsrBackend();
  await b.setup(ctx);
  assert.equal(await b.readSignal('MSR::PLATFORM_INFO:MAX_NON_TURBO_RATIO', Package, 0), 3.2e9);
  assert.ok(b.signalNames().includes('MSR::PKG_ENERGY_STATUS:ENERGY'), 'built-in table still there');
  assert.match(
    b
      .diagnostics()
      .map((d) => d.reason)
      .join('\n'),
    /broken\.json: invalid MSR table: msrs\.X\.offset: offset must be a hex string/,
  );
});

test('POWERCAP wins CPU_ENERGY over MSR; MSR still serves its own names', async () => {
  const { root } = intelWithMsrFiles();
  const pio = await loadPlatform({
    sysroot: new (await import('../../../src/platform/sysroot.js')).Sysroot(root),
    include: (n) => n === 'POWERCAP' || n === 'MSR',
  });
  assert.equal(pio.signalInfo('CPU_ENERGY').backend, 'POWERCAP');
  assert.equal(pio.signalInfo('CPU_PACKAGE_TEMPERATURE').backend, 'MSR');
  assert.equal((await pio.readSignal('MSR::PKG_ENERGY_STATUS:ENERGY', Board, 0)) > 0, true);
  assert.deepEqual(
    pio.diagnostics().filter((d) => d.backend === 'MSR'),
    [],
  );
});

test('MSR backend is unavailable without a device, with the reason', async () => {
  const pio = await loadPlatform({
    sysroot: fixtureContext('intel-2s').ctx.sysroot,
    include: (n) => n === 'MSR',
  });
  assert.match(
    pio
      .diagnostics()
      .map((d) => d.reason)
      .join('\n'),
    /no \/dev\/cpu\/0\/msr \(load the msr or msr-safe kernel module\)/,
  );
});
