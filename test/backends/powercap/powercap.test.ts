import assert from 'node:assert/strict';
import { chmodSync, cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { PowercapBackend } from '../../../src/backends/powercap/index.js';
import { parseZoneDirName, parseZoneName } from '../../../src/backends/powercap/zones.js';
import { DomainType } from '../../../src/platform/domains.js';
import {
  fixtureContext,
  platformWith,
  powercapPlatform,
  scriptedClock,
} from '../../helpers/backend-fixtures.js';
import { runCli } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

const RAPL = 'sys/class/powercap';
const { Board, Package } = DomainType;

test('zone directory names: multi-digit indices, subzones and MMIO zones', () => {
  // The kernel writes zone ids in hex ("%s:%x"): the eleventh zone is `a`, `10` is zone 16.
  assert.deepEqual(parseZoneDirName('intel-rapl:a'), { mmio: false, zone: 10 });
  assert.deepEqual(parseZoneDirName('intel-rapl:10'), { mmio: false, zone: 16 });
  assert.deepEqual(parseZoneDirName('intel-rapl:b:1'), { mmio: false, zone: 11, subzone: 1 });
  assert.equal(parseZoneDirName('intel-rapl:g'), undefined);
  assert.equal(parseZoneDirName('intel-rapl:A'), undefined, 'the kernel writes lower case');
  assert.deepEqual(parseZoneDirName('intel-rapl-mmio:0'), { mmio: true, zone: 0 });
  assert.equal(parseZoneDirName('intel-rapl'), undefined);
  assert.deepEqual(parseZoneName('package-0-die-1\n', 'x'), { kind: 'package', packageId: 0 });
  assert.throws(() => parseZoneName('gpu', 'zone/name'), /zone\/name: unknown RAPL zone name "gpu"/);
});

test('Intel 2-socket: every zone kind becomes a signal in joules on the right domain', async () => {
  const { pio } = await powercapPlatform('intel-2s');
  const names = pio.signalNames();
  for (const n of ['CPU_ENERGY', 'DRAM_ENERGY', 'BOARD_ENERGY', 'CPU_POWER', 'DRAM_POWER', 'BOARD_POWER']) {
    assert.ok(names.includes(n), `${n} missing`);
  }
  for (const n of ['POWERCAP::CPU_CORE_ENERGY', 'POWERCAP::CPU_UNCORE_ENERGY', 'POWERCAP::MMIO_CPU_ENERGY']) {
    assert.ok(names.includes(n), `${n} missing`);
  }
  assert.equal(pio.signalInfo('CPU_ENERGY').aliasFor, 'POWERCAP::CPU_ENERGY');
  assert.equal(await pio.readSignal('CPU_ENERGY', Package, 1), 223456.789012);
  assert.equal(await pio.readSignal('DRAM_ENERGY', Package, 0), 45678.901234);
  assert.equal(await pio.readSignal('POWERCAP::CPU_CORE_ENERGY', Package, 1), 88765.4321);
  assert.equal(await pio.readSignal('BOARD_ENERGY', Board, 0), 145678.901234);
  // Package energy summed over the board: both sockets, the MMIO view is not double counted.
  assert.equal(await pio.readSignal('CPU_ENERGY', Board, 0), 123456.789012 + 223456.789012);
});

test('AMD EPYC: package zones only', async () => {
  const { pio } = await powercapPlatform('amd-epyc');
  assert.equal(await pio.readSignal('CPU_ENERGY', Package, 1), 6000);
  assert.equal(pio.isValidSignal('DRAM_ENERGY'), false);
  assert.equal(pio.isValidControl('CPU_POWER_LIMIT_CONTROL'), false);
});

test('multi-digit zones (intel-rapl:10, intel-rapl:11:10) are found', async () => {
  const { pio } = await powercapPlatform('rapl-multidigit');
  assert.equal(await pio.readSignal('CPU_ENERGY', Package, 10), 11);
  assert.equal(await pio.readSignal('CPU_ENERGY', Package, 11), 12);
  assert.equal(await pio.readSignal('DRAM_ENERGY', Package, 11), 777);
  assert.throws(() => pio.pushSignal('DRAM_ENERGY', Package, 3), /not available at package 3/);
});

test('batch reads: energy is wrap-corrected and power is exact; a failed read is NaN, never 0', async () => {
  const c = scriptedClock();
  const { root, pio } = await powercapPlatform('intel-2s', c.clock);
  const file = join(root, RAPL, 'intel-rapl:0/energy_uj');
  const modulus = 262143328850 + 1;
  const energy = pio.pushSignal('CPU_ENERGY', Package, 0);
  const power = pio.pushSignal('CPU_POWER', Package, 0);
  const boardPower = pio.pushSignal('CPU_POWER', Board, 0);
  const script = [
    // [counter µJ, seconds since the previous batch]
    [262000000000, 0],
    [(262000000000 + 150_000_000) % modulus, 0.5], // wraps: 150 J in 0.5 s = 300 W
    [(262000000000 + 350_000_000) % modulus, 2], // 200 J in 2 s = 100 W
  ] as const;
  let truth = 262000000000;
  const seen: [number, number][] = [];
  for (const [i, [raw, dt]] of script.entries()) {
    if (i > 0) truth += (raw - script[i - 1]![0] + modulus) % modulus;
    writeFileSync(file, `${raw}\n`);
    c.now += dt;
    await pio.readBatch();
    seen.push([pio.sample(energy), pio.sample(power)]);
  }
  assert.equal(seen[0]![0], 262000);
  assert.ok(Number.isNaN(seen[0]![1]), 'power needs two reads');
  assert.equal(seen[1]![1], 300);
  assert.equal(seen[2]![1], 100);
  assert.equal(Math.round(seen[2]![0] * 1e6), truth);
  assert.equal(pio.sample(boardPower), 100, 'socket 1 counter stood still');

  // A garbled counter file: both energy and power are NaN, not 0 and not a jump.
  writeFileSync(file, 'garbage\n');
  c.now += 1;
  await pio.readBatch();
  assert.ok(Number.isNaN(pio.sample(energy)));
  assert.ok(Number.isNaN(pio.sample(power)));
  await assert.rejects(
    pio.readSignal('CPU_ENERGY', Package, 0),
    /energy_uj: expected an unsigned integer, found "garbage"/,
  );
});

test('a counter going backwards is reported in diagnostics and adds no energy', async () => {
  const c = scriptedClock();
  const { root, pio, backend } = await powercapPlatform('intel-2s', c.clock);
  const file = join(root, RAPL, 'intel-rapl:1/energy_uj');
  const h = pio.pushSignal('CPU_ENERGY', Package, 1);
  writeFileSync(file, '5000000000\n');
  await pio.readBatch();
  writeFileSync(file, '4000000000\n');
  await pio.readBatch();
  assert.equal(pio.sample(h), 5000);
  assert.ok(
    backend.diagnostics().some((d) => /intel-rapl:1: counter went backwards by 1000000000/.test(d.reason)),
  );
});

test('power limit: watts to µW, range checked, read back, saved and restored', async () => {
  const { root, pio } = await powercapPlatform('intel-2s');
  const limitFile = join(root, RAPL, 'intel-rapl:0/constraint_0_power_limit_uw');
  const save = tempDir();
  await pio.saveControls(save);
  await pio.writeControl('CPU_POWER_LIMIT_CONTROL', Package, 0, 150);
  assert.equal(readFileSync(limitFile, 'utf8'), '150000000\n');
  assert.equal(await pio.readSignal('CPU_POWER_LIMIT_CONTROL', Package, 0), 150);
  await assert.rejects(
    pio.writeControl('CPU_POWER_LIMIT_CONTROL', Package, 0, 500),
    /500 W is outside package 0's range 40\.\.165 W; nothing written/,
  );
  await assert.rejects(pio.writeControl('CPU_POWER_LIMIT_CONTROL', Package, 0, 10), /outside/);
  assert.equal(readFileSync(limitFile, 'utf8'), '150000000\n');
  // A board-level limit is split across the packages (sum aggregation).
  await pio.writeControl('CPU_POWER_LIMIT_CONTROL', Board, 0, 200);
  assert.equal(await pio.readSignal('CPU_POWER_LIMIT_CONTROL', Package, 1), 100);
  await pio.writeControl('CPU_POWER_TIME_WINDOW_CONTROL', Package, 0, 0.5);
  assert.equal(
    readFileSync(join(root, RAPL, 'intel-rapl:0/constraint_0_time_window_us'), 'utf8'),
    '500000\n',
  );
  await assert.rejects(pio.writeControl('CPU_POWER_TIME_WINDOW_CONTROL', Package, 0, 100), /outside/);
  await pio.restoreControls(save);
  assert.equal(readFileSync(limitFile, 'utf8'), '165000000\n');
  assert.equal(await pio.readSignal('CPU_POWER_LIMIT_CONTROL', Package, 1), 165);
  assert.equal(await pio.readSignal('CPU_POWER_TIME_WINDOW_CONTROL', Package, 0), 0.999424);
  assert.equal(await pio.readSignal('CPU_POWER_LIMIT_DEFAULT', Package, 0), 165);
  assert.equal(await pio.readSignal('CPU_POWER_MIN_AVAIL', Package, 0), 40);
});

test('a zone with a garbled name is reported, the others still load', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  writeFileSync(join(root, RAPL, 'intel-rapl:1/name'), 'mystery\n');
  rmSync(join(root, RAPL, 'intel-rapl:2/max_energy_range_uj'));
  const b = new PowercapBackend();
  await b.setup(ctx);
  const reasons = b
    .diagnostics()
    .map((d) => d.reason)
    .join('\n');
  assert.match(reasons, /intel-rapl:1\/name: unknown RAPL zone name "mystery"/);
  assert.match(reasons, /intel-rapl:2\/max_energy_range_uj: no such file/);
  assert.equal(await b.readSignal('POWERCAP::CPU_ENERGY', Package, 0), 123456.789012);
});

test('an empty optional constraint file loses only the bound it states, with the reason', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  writeFileSync(join(root, RAPL, 'intel-rapl:0/constraint_0_max_power_uw'), '');
  const b = new PowercapBackend();
  const pio = await platformWith(ctx, b);
  const reasons = b.diagnostics().map((d) => d.reason);
  assert.ok(
    reasons.some((r) =>
      /intel-rapl:0\/constraint_0_max_power_uw: .*; the largest power limit is not known/.test(r),
    ),
    reasons.join('\n'),
  );
  assert.equal(pio.whyUnavailable('CPU_POWER_LIMIT_DEFAULT', Package, 0) !== undefined, true);
  assert.equal(
    pio.whyUnavailable('CPU_POWER_LIMIT_DEFAULT', Package, 1),
    undefined,
    'package 1 keeps its bound',
  );
  assert.equal(await pio.readSignal('CPU_POWER_LIMIT_DEFAULT', Package, 1), 165);
  assert.equal(await pio.readSignal('CPU_ENERGY', Package, 0), 123456.789012, 'the zone itself stays');
  assert.equal(await pio.readSignal('CPU_POWER_MIN_AVAIL', Package, 0), 40);
});

test('a package without a RAPL zone loses that package only, named with the reason', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  writeFileSync(join(root, RAPL, 'intel-rapl:1/name'), 'mystery\n');
  const pio = await platformWith(ctx, new PowercapBackend());
  assert.equal(pio.whyUnavailable('CPU_ENERGY', Package, 0), undefined);
  const why = pio.whyUnavailable('CPU_ENERGY', Package, 1);
  assert.match(why ?? '', /no package RAPL zone with an energy counter for package 1/);
  // A board-wide sum would understate without package 1: it is unavailable too, for that reason.
  assert.equal(pio.whyUnavailable('CPU_ENERGY', Board, 0), why);
  assert.throws(
    () => pio.pushSignal('CPU_ENERGY', Package, 1),
    /not available at package 1: no package RAPL zone/,
  );
  assert.equal(await pio.readSignal('CPU_ENERGY', Package, 0), 123456.789012);
});

test('a zone-like directory whose name does not parse is named in diagnostics', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  cpSync(join(root, RAPL, 'intel-rapl:0'), join(root, RAPL, 'intel-rapl:x'), { recursive: true });
  const b = new PowercapBackend();
  await b.setup(ctx);
  const reasons = b.diagnostics().map((d) => d.reason);
  assert.ok(
    reasons.some((r) => /intel-rapl:x: not a zone name joulegate knows/.test(r)),
    reasons.join('\n'),
  );
  assert.equal(await b.readSignal('POWERCAP::CPU_ENERGY', Package, 0), 123456.789012);
});

test('no powercap tree: the backend says it is unavailable', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  rmSync(join(root, RAPL), { recursive: true });
  await assert.rejects(new PowercapBackend().setup(ctx), /no RAPL zones under/);
  chmodSync(root, 0o755);
});

test('`joulegate write CPU_POWER_LIMIT_CONTROL package 0 150` writes µW and reads back 150', async () => {
  const { root } = fixtureContext('intel-2s');
  const env = { JOULEGATE_SYSROOT: root, JOULEGATE_CONFIG_PATH: tempDir() };
  const w = await runCli(['write', 'CPU_POWER_LIMIT_CONTROL', 'package', '0', '150'], { env });
  assert.equal(w.code, 0, w.stderr);
  assert.equal(
    readFileSync(join(root, RAPL, 'intel-rapl:0/constraint_0_power_limit_uw'), 'utf8'),
    '150000000\n',
  );
  const r = await runCli(['read', 'CPU_POWER_LIMIT_CONTROL', 'package', '0'], { env });
  assert.equal(r.stdout, '150\n', r.stderr);
  const bad = await runCli(['write', 'CPU_POWER_LIMIT_CONTROL', 'package', '0', '900'], { env });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /900 W is outside package 0's range 40\.\.165 W; nothing written/);
  assert.equal(
    readFileSync(join(root, RAPL, 'intel-rapl:0/constraint_0_power_limit_uw'), 'utf8'),
    '150000000\n',
  );
});

test('multi-die packages: die zones are summed into the package; no single-die limit control', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  const dir = join(root, RAPL);
  writeFileSync(join(dir, 'intel-rapl:1/name'), 'package-0-die-1\n');
  writeFileSync(join(dir, 'intel-rapl:0/name'), 'package-0-die-0\n');
  const b = new PowercapBackend();
  await b.setup(ctx);
  assert.equal(await b.readSignal('POWERCAP::CPU_ENERGY', Package, 0), 123456.789012 + 223456.789012);
  assert.equal(b.isValidControl('POWERCAP::CPU_POWER_LIMIT'), false);
  assert.ok(
    b.diagnostics().some((d) => /package 0 has 2 die zones with separate power limits/.test(d.reason)),
  );
});
