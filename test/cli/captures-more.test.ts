import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { commandsSucceed, scrapeChecked, sessionValues, sysrootEnv } from '../helpers/capture-commands.js';
import { CAPTURES_DIR, captureSysroot, type LactGpu, lactGpus, TELEGRAF_CASES } from '../helpers/captures.js';
import { runCli } from '../helpers/cli.js';
import { seriesValue } from '../helpers/exporter.js';
import { needsTool, requirements } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { packTtar, unpackTtar } from '../helpers/ttar.js';

/*
 * joulegate over more real machines' files: codecarbon's RAPL tree (with psys), telegraf's hwmon
 * test cases (nvme, k10temp) and LACT's GPU hwmon snapshots (23 amdgpu/radeon/i915/xe GPUs).
 * Every command runs cleanly, and each quantity both sides show equals the value the capture's
 * own project expects. docs/captures.md tables the comparison; each capture's SOURCE.md says where
 * its files and its expected values come from.
 */

describe('ttar packer (vendors the codecarbon and telegraf trees)', () => {
  it('packs a tree that unpackTtar gives back byte for byte, links and modes included', () => {
    const src = tempDir('jg-ttar-src-');
    const tree = join(src, 'tree');
    mkdirSync(join(tree, 'a/b'), { recursive: true });
    const files: [string, string][] = [
      ['a/plain', '52649883221\n'],
      ['a/empty', ''],
      ['a/no-newline', 'long_term'],
      ['a/b/two-lines', 'x\ny\n'],
      ['a/b/nul', 'vim\0test.go\0'],
      ['a/b/words', 'EOF\nNULLBYTE here\nends in EOF'],
    ];
    for (const [f, text] of files) writeFileSync(join(tree, f), text, 'latin1');
    symlinkSync('../../../class/powercap', join(tree, 'a/subsystem'));
    symlinkSync('../../nvme0/', join(tree, 'a/b/device'));
    const archive = join(src, 'tree.ttar');
    packTtar(src, 'tree', archive);
    const dest = tempDir('jg-ttar-dest-');
    unpackTtar(archive, dest);
    for (const [f, text] of files) assert.equal(readFileSync(join(dest, 'tree', f), 'latin1'), text, f);
    assert.deepEqual(readdirSync(join(dest, 'tree/a')).sort(), [
      'b',
      'empty',
      'no-newline',
      'plain',
      'subsystem',
    ]);
    assert.equal(readlinkSync(join(dest, 'tree/a/subsystem')), '../../../class/powercap');
    assert.equal(readlinkSync(join(dest, 'tree/a/b/device')), '../../nvme0/');
  });
});

/*
 * codecarbon (tests/test_cpu.py TestIntelRAPL, commit 0cc1fcf3): over tests/test_data/rapl it
 * expects the two top-level zones, {"Processor Power_0(Watt)": 0.0, "psys": 0.0} (package-0 and
 * psys, 0 W because the files never change). It asserts no subzone; for those (and for the
 * energies) the expected values below are the capture's own energy_uj files.
 */
const RAPL = 'sys/devices/virtual/powercap/intel-rapl';
const microjoules = (root: string, zone: string) =>
  Number(readFileSync(join(root, RAPL, zone, 'energy_uj'), 'utf8')) / 1e6;

describe('codecarbon capture (RAPL with psys)', { skip: requirements(needsTool('promtool')) }, () => {
  it('monitor, sensors, topo succeed; package-0 and psys are the cpu and board counters', async () => {
    const { sensors, report } = await commandsSucceed('codecarbon');
    // codecarbon finds exactly these two top-level zones: package-0 and psys.
    assert.match(sensors, /CPU_ENERGY-package-0/);
    assert.match(sensors, /BOARD_ENERGY/);
    assert.match(report, /cpu: counter, energy counters via POWERCAP \[CPU_ENERGY-package-0\]/);
    assert.match(report, /board: counter, energy counters via POWERCAP \[BOARD_ENERGY\]/);
    // codecarbon's 0.0 W for both: a capture never changes, so the run used 0 J.
    assert.match(report, /round 0: board 0\.000 J/);
    // Four empty constraint_0_max_power_uw files (core, uncore, dram, psys) each cost only that bound.
    for (const zone of ['intel-rapl:1', 'intel-rapl:0:0', 'intel-rapl:0:1', 'intel-rapl:0:2'])
      assert.match(
        sensors,
        new RegExp(
          `${zone}/constraint_0_max_power_uw: expected an unsigned integer, found ""; the largest power limit is not known`,
        ),
      );
    assert.doesNotMatch(sensors, /zone \/sys\/class\/powercap\/\S+ left out/);
  });

  it('session reads every zone’s energy as its energy_uj file holds it', async () => {
    const root = captureSysroot('codecarbon');
    const { values, stderr } = await sessionValues(root, [
      'CPU_ENERGY package 0',
      'BOARD_ENERGY board 0',
      'POWERCAP::CPU_CORE_ENERGY package 0',
      'POWERCAP::CPU_UNCORE_ENERGY package 0',
      'DRAM_ENERGY package 0',
    ]);
    assert.doesNotMatch(stderr, /left out/);
    // intel-rapl:0 package-0 52649883221 µJ, intel-rapl:1 psys 117870082040 µJ.
    assert.equal(values.get('CPU_ENERGY-package-0'), 52649.883221);
    assert.equal(values.get('CPU_ENERGY-package-0'), microjoules(root, 'intel-rapl:0'));
    assert.equal(values.get('BOARD_ENERGY'), 117870.08204);
    assert.equal(values.get('BOARD_ENERGY'), microjoules(root, 'intel-rapl:1'));
    // Subzones core, uncore, dram (enabled = 0: their power limits are off, their counters count).
    assert.equal(
      values.get('POWERCAP::CPU_CORE_ENERGY-package-0'),
      microjoules(root, 'intel-rapl:0/intel-rapl:0:0'),
    );
    assert.equal(values.get('POWERCAP::CPU_CORE_ENERGY-package-0'), 36233.94789);
    assert.equal(
      values.get('POWERCAP::CPU_UNCORE_ENERGY-package-0'),
      microjoules(root, 'intel-rapl:0/intel-rapl:0:1'),
    );
    assert.equal(values.get('POWERCAP::CPU_UNCORE_ENERGY-package-0'), 4003.931217);
    assert.equal(values.get('DRAM_ENERGY-package-0'), microjoules(root, 'intel-rapl:0/intel-rapl:0:2'));
    assert.equal(values.get('DRAM_ENERGY-package-0'), 10642.772192);
  });

  it('exporter: promtool-clean, with package 0’s energy counter', async () => {
    const { body } = await scrapeChecked(captureSysroot('codecarbon'));
    // The exported counter starts at the exporter's start: presence only (and 0 J over a still capture).
    assert.equal(seriesValue(body, 'joulegate_package_energy_joules_total', 'node="capture",package="0"'), 0);
  });
});

/** telegraf's expected_v2.out of one case: `sensor` (and `device`) tags → °C, in file order. */
function telegrafExpected(kase: string): { device?: string; sensor: string; celsius: number }[] {
  const text = readFileSync(join(CAPTURES_DIR, `telegraf/${kase}.expected_v2.out`), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const m = /^temp,(?:device=([^,]+),)?sensor=(\S+) temp=(\S+)$/.exec(line);
      assert.ok(m, line);
      return { ...(m[1] ? { device: m[1] } : {}), sensor: m[2]!, celsius: Number(m[3]) };
    });
}

/*
 * telegraf (plugins/inputs/temp/temp_test.go TestCases, TestNameCollisions): each case's metrics
 * equal its expected_v2.out. telegraf's sensor tag is `<chip name>_<label>`; two nvme chips share
 * it (told apart by their `device` tag, nvme0/nvme1, or in `with_name` by order alone). joulegate
 * names same-named board chips NVME__0, NVME__1 in device order (here hwmon0, hwmon1: the device
 * links dangle, so the hwmon number decides) and reads k10temp per package.
 */
const TELEGRAF_SIGNALS: Record<string, string> = {
  nvme_composite: 'COMPOSITE_TEMP',
  nvme_sensor_1: 'SENSOR_1_TEMP',
  nvme_sensor_2: 'SENSOR_2_TEMP',
  k10temp_tctl: 'HWMON::K10TEMP_TCTL_TEMP package 0',
  k10temp_tccd1: 'HWMON::K10TEMP_TCCD1_TEMP package 0',
};

describe('telegraf capture (hwmon nvme and k10temp)', { skip: requirements(needsTool('promtool')) }, () => {
  for (const kase of TELEGRAF_CASES) {
    it(`${kase}: commands succeed; every temperature equals telegraf's`, async () => {
      const { root, sensors } = await commandsSucceed(`telegraf/${kase}`);
      assert.doesNotMatch(sensors, /HWMON: /, 'no chip is left out, dangling device links or not');
      const expected = telegrafExpected(kase);
      // Each nvme chip's three lines (Composite, Sensor 1, Sensor 2) come in hwmon order: general
      // has one chip, the others two.
      const nvme = expected.filter((e) => e.sensor.startsWith('nvme_'));
      const chips = nvme.length / 3;
      assert.equal(chips, kase === 'general' ? 1 : 2);
      const requests: [string, number][] = [];
      for (const e of expected) {
        const signal = TELEGRAF_SIGNALS[e.sensor];
        assert.ok(signal, e.sensor);
        if (!e.sensor.startsWith('nvme_')) {
          requests.push([signal, e.celsius]);
          continue;
        }
        const chip = chips === 1 ? 'NVME' : `NVME__${Math.floor(nvme.indexOf(e) / 3)}`;
        requests.push([`HWMON::${chip}_${signal} board 0`, e.celsius]);
      }
      // k10temp's Tctl (no Tdie here) is the package temperature.
      const tctl = expected.find((e) => e.sensor === 'k10temp_tctl')!.celsius;
      requests.push(['CPU_PACKAGE_TEMPERATURE package 0', tctl]);
      const { values, stderr } = await sessionValues(
        root,
        requests.map(([r]) => r),
      );
      assert.doesNotMatch(stderr, /left out/);
      for (const [request, celsius] of requests) {
        const [signal, domain, idx] = request.split(' ') as [string, string, string];
        const column = domain === 'board' ? signal : `${signal}-${domain}-${idx}`;
        assert.equal(values.get(column), celsius, `${kase}: ${request}`);
      }
    });
  }

  it('with_device_tag: the nvme chips read in telegraf’s device order (nvme0, nvme1)', async () => {
    const root = captureSysroot('telegraf/with_device_tag');
    const byDevice = telegrafExpected('with_device_tag').filter((e) => e.sensor === 'nvme_composite');
    assert.deepEqual(
      byDevice.map((e) => e.device),
      ['nvme0', 'nvme1'],
    );
    const { values } = await sessionValues(root, [
      'HWMON::NVME__0_COMPOSITE_TEMP board 0',
      'HWMON::NVME__1_COMPOSITE_TEMP board 0',
    ]);
    assert.equal(values.get('HWMON::NVME__0_COMPOSITE_TEMP'), byDevice[0]!.celsius);
    assert.equal(values.get('HWMON::NVME__1_COMPOSITE_TEMP'), byDevice[1]!.celsius);
  });

  it('exporter: promtool-clean; the package temperature is k10temp’s Tctl', async () => {
    const { body } = await scrapeChecked(captureSysroot('telegraf/with_name'));
    const tctl = telegrafExpected('with_name').find((e) => e.sensor === 'k10temp_tctl')!.celsius;
    assert.equal(
      seriesValue(body, 'joulegate_package_temperature_celsius', 'node="capture",package="0"'),
      tctl,
    );
  });
});

/*
 * LACT (lact-daemon/src/tests/mod.rs snapshot_everything): for each GPU of tests/snapshots its
 * device info must equal lact-daemon/src/tests/snapshots/lact_daemon__tests__<vendor>__<gpu>.snap.
 * Its `stats` hold what LACT reads from hwmon: power.average = power1_average, power.current =
 * power1_input (W), temps.<label>.current = tempN_input (°C), fan.speed_current = fan1_input
 * (RPM), voltage.gpu (mV) = the GPU rail, voltage.sensors.northbridge = vddnb. Some stats come
 * from the binary gpu_metrics file instead, which is not vendored: those are listed here and not
 * compared. LACT shows no Intel energy (it needs two samples); those are compared with the files.
 */
const FROM_GPU_METRICS: Record<string, string[]> = {
  'amd/phoenix': ['temps.soc'],
  'amd/strixpoint': ['temps.skin', 'temps.soc'],
  'amd/rx6900xt': ['temps.vrgfx', 'temps.vrmem', 'temps.vrsoc', 'voltage.mem', 'voltage.soc', 'voltage.gpu'],
  'amd/rx7800xt': ['temps.vrgfx', 'temps.vrmem', 'temps.vrsoc', 'voltage.mem', 'voltage.soc'],
  'amd/rx9070': ['temps.vrgfx', 'temps.vrmem', 'temps.vrsoc', 'voltage.mem', 'voltage.soc'],
  'amd/rx7600s': ['voltage.mem', 'voltage.soc'],
};

/** LACT's names for temperature channels without a label (radeon: the number; i915: "gpu"). */
const UNLABELLED_TEMP: Record<string, Record<string, string>> = {
  'amd/hd7870': { '1': 'temp1' },
  'intel/a380-i915': { gpu: 'temp1' },
};

interface LactStats {
  power: { average?: number; current?: number };
  temps: Record<string, { current: number | null }>;
  fan: { speed_current?: number | null };
  voltage: { gpu?: number; sensors: Record<string, number> };
}

/** A .snap file's `stats`: insta's header (between `---` lines), then LACT's device info as JSON. */
function lactStats(gpu: string): LactStats {
  const file = join(CAPTURES_DIR, `lact/expected/lact_daemon__tests__${gpu.replace('/', '__')}.snap`);
  const text = readFileSync(file, 'utf8');
  return JSON.parse(text.slice(text.indexOf('\n---\n', 3) + 5)).stats;
}

/** A vendored hwmon file's text, without the NUL padding some snapshots carry. */
function lactFile(g: LactGpu, file: string): string | undefined {
  const path = join(CAPTURES_DIR, 'lact/snapshots', g.gpu, g.hwmonDir, file);
  return existsSync(path) ? readFileSync(path, 'latin1').replace(/\0+$/, '').trim() : undefined;
}

const word = (text: string) =>
  text
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');

/** Each GPU's chip word: its `name`, with `__i` in device order when several chips share it. */
function chipWords(gpus: LactGpu[]): Map<LactGpu, string> {
  const names = gpus.map((g) => word(lactFile(g, 'name')!));
  const seen = new Map<string, number>();
  return new Map(
    gpus.map((g, i) => {
      const n = names[i]!;
      if (names.filter((x) => x === n).length === 1) return [g, n];
      const k = seen.get(n) ?? 0;
      seen.set(n, k + 1);
      return [g, `${n}__${k}`];
    }),
  );
}

/** The channels (`temp2`) of one kind in a chip's listing, with their labels. */
function lactChannels(g: LactGpu, prefix: string): { channel: string; label?: string }[] {
  const dir = join(CAPTURES_DIR, 'lact/snapshots', g.gpu, g.hwmonDir);
  return readdirSync(dir)
    .map((f) => new RegExp(`^(${prefix}\\d+)_input$`).exec(f)?.[1])
    .filter((c): c is string => c !== undefined)
    .sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)))
    .map((channel) => {
      const label = lactFile(g, `${channel}_label`);
      return { channel, ...(label ? { label } : {}) };
    });
}

/** Every comparison for one GPU: [joulegate request, LACT's (or the file's) value, what]. */
function lactComparisons(g: LactGpu, chip: string): [string, number, string][] {
  const stats = lactStats(g.gpu);
  const skip = new Set(FROM_GPU_METRICS[g.gpu] ?? []);
  const out: [string, number, string][] = [];
  const req = (middle: string, quantity: string) => `HWMON::${chip}_${middle}_${quantity} board 0`;
  const powerWord = word(lactFile(g, 'power1_label') ?? 'power1');
  // LACT has power.average exactly when power1_average exists, power.current when power1_input does.
  assert.equal(
    stats.power.average !== undefined,
    lactFile(g, 'power1_average') !== undefined,
    `${g.gpu} average`,
  );
  assert.equal(
    stats.power.current !== undefined,
    lactFile(g, 'power1_input') !== undefined,
    `${g.gpu} current`,
  );
  if (stats.power.average !== undefined)
    out.push([req(powerWord, 'POWER_AVERAGE'), stats.power.average, 'power.average']);
  if (stats.power.current !== undefined)
    out.push([req(powerWord, 'POWER'), stats.power.current, 'power.current']);
  const temps = lactChannels(g, 'temp');
  for (const [key, { current }] of Object.entries(stats.temps)) {
    if (skip.has(`temps.${key}`)) {
      assert.ok(
        !temps.some((t) => t.label === key),
        `${g.gpu} temps.${key} is listed as gpu_metrics but hwmon has it`,
      );
      continue;
    }
    const byLabel = temps.find((t) => t.label === key);
    const channel = byLabel ?? temps.find((t) => t.channel === UNLABELLED_TEMP[g.gpu]?.[key]);
    assert.ok(channel, `${g.gpu}: temps.${key} has a hwmon channel`);
    out.push([req(word(channel.label ?? channel.channel), 'TEMP'), current!, `temps.${key}`]);
  }
  const fan = stats.fan.speed_current;
  assert.equal(fan !== undefined && fan !== null, lactFile(g, 'fan1_input') !== undefined, `${g.gpu} fan`);
  if (fan !== undefined && fan !== null) out.push([req('FAN1', 'FAN_SPEED'), fan, 'fan.speed_current']);
  const rails = lactChannels(g, 'in');
  // The GPU rail: vddgfx (amdgpu), else the first rail that is not vddnb (i915 in0, xe in1 "pkg").
  const gpuRail = rails.find((r) => r.label === 'vddgfx') ?? rails.find((r) => r.label !== 'vddnb');
  if (skip.has('voltage.gpu')) assert.equal(stats.voltage.gpu, undefined);
  else {
    assert.equal(stats.voltage.gpu !== undefined, gpuRail !== undefined, `${g.gpu} voltage.gpu`);
    if (gpuRail && stats.voltage.gpu !== undefined)
      out.push([
        req(word(gpuRail.label ?? gpuRail.channel), 'VOLTAGE'),
        stats.voltage.gpu / 1e3,
        'voltage.gpu',
      ]);
  }
  for (const [key, mV] of Object.entries(stats.voltage.sensors)) {
    if (skip.has(`voltage.${key}`)) continue;
    assert.equal(key, 'northbridge', `${g.gpu}: voltage.sensors.${key}`);
    out.push([req('VDDNB', 'VOLTAGE'), mV / 1e3, 'voltage.sensors.northbridge']);
  }
  // Energy counters: LACT shows none; the capture's own files (µJ).
  for (const e of lactChannels(g, 'energy'))
    out.push([
      req(word(e.label ?? e.channel), 'ENERGY'),
      Number(lactFile(g, `${e.channel}_input`)) / 1e6,
      `${e.channel}_input (file)`,
    ]);
  return out;
}

describe('LACT capture (23 GPUs’ hwmon)', { skip: requirements(needsTool('promtool')) }, () => {
  it('monitor, sensors, topo succeed; no chip or channel is left out', async () => {
    const { sensors, report } = await commandsSucceed('lact');
    // Not a single HWMON note: padded files read, amdgpu's fan1_enable 0 is not "switched off".
    assert.doesNotMatch(sensors, /HWMON/);
    assert.doesNotMatch(report, /HWMON/);
  });

  it('session reads what LACT reads from hwmon: power, temperatures, fans, voltages; energy as its files', async () => {
    const root = captureSysroot('lact');
    const gpus = lactGpus();
    assert.equal(gpus.length, 23);
    const words = chipWords(gpus);
    const all = gpus.flatMap((g) => lactComparisons(g, words.get(g)!).map((c) => ({ gpu: g.gpu, c })));
    const { values, stderr } = await sessionValues(
      root,
      all.map(({ c }) => c[0]),
    );
    assert.doesNotMatch(stderr, /left out/);
    for (const { gpu, c } of all) {
      const [request, expected, what] = c;
      assert.equal(values.get(request.split(' ')[0]!), expected, `${gpu} ${what}: ${request}`);
    }
    // Spot checks, by hand from the .snap files.
    const at = (gpu: string) => words.get(gpus.find((g) => g.gpu === gpu)!)!;
    assert.equal(values.get(`HWMON::${at('amd/rx6900xt')}_PPT_POWER_AVERAGE`), 36); // NUL-padded files
    assert.equal(values.get(`HWMON::${at('amd/rx6900xt')}_JUNCTION_TEMP`), 59);
    assert.equal(values.get(`HWMON::${at('amd/rx5700xt')}_FAN1_FAN_SPEED`), 29); // fan1_enable 0
    assert.equal(values.get(`HWMON::${at('amd/vangogh')}_SLOWPPT_POWER`), 4.057);
    assert.equal(values.get(`HWMON::${at('intel/b580-6.16')}_CARD_ENERGY`), 0); // a 0 reading, not missing
    assert.equal(values.get(`HWMON::${at('intel/a380-xe')}_PKG_TEMP`), 56); // channels from 2
    assert.equal(all.length, 126, 'comparisons: every hwmon-derived stat of 23 GPUs, and 6 energy files');
  });

  it('chips without a value are not offered: a power label alone (r7-240, r9-280) makes no power signal', async () => {
    const root = captureSysroot('lact');
    const gpus = lactGpus();
    const words = chipWords(gpus);
    const listing = await runCli(['read'], sysrootEnv(root));
    assert.equal(listing.code, 0, listing.stderr);
    for (const gpu of ['amd/r7-240', 'amd/r9-280']) {
      const chip = words.get(gpus.find((g) => g.gpu === gpu)!)!;
      assert.match(listing.stdout, new RegExp(`HWMON::${chip}_EDGE_TEMP\\b`));
      assert.doesNotMatch(listing.stdout, new RegExp(`HWMON::${chip}_PPT_`));
    }
  });

  it('exporter: promtool-clean', async () => {
    await scrapeChecked(captureSysroot('lact'));
  });
});
