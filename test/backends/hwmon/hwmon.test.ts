import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { HwmonBackend } from '../../../src/backends/hwmon/index.js';
import {
  assignPackages,
  chipName,
  indexedWords,
  nameSensors,
  nameWord,
  packageFromLabel,
  packageTemperatureChannel,
  parseChannels,
  parseSensorFile,
  parseZoneEntry,
  sensorSignalName,
  thermalZoneSignalNames,
} from '../../../src/backends/hwmon/sensors.js';
import { parseSigned } from '../../../src/backends/sysfs-reader.js';
import { DomainType } from '../../../src/platform/domains.js';
import { Units } from '../../../src/platform/signal-info.js';
import { Sysroot } from '../../../src/platform/sysroot.js';
import { loadTopology } from '../../../src/platform/topology.js';
import { fixtureContext, platformWith } from '../../helpers/backend-fixtures.js';
import { CAPTURES_DIR, captureSysroot } from '../../helpers/captures.js';
import { CLI, run } from '../../helpers/cli.js';
import { needsTestUsers } from '../../helpers/requirements.js';
import { asUser, ensureUser } from '../../helpers/users.js';

const asTestUsers = needsTestUsers();

const { Board, Package } = DomainType;

test('sensor file names and signal names', () => {
  assert.equal(parseSensorFile('temp12_input')?.channel, 'temp12');
  assert.equal(parseSensorFile('power2_average')?.kind.quantity, 'POWER_AVERAGE');
  assert.equal(parseSensorFile('temp1_label'), undefined);
  assert.equal(parseSensorFile('fan1_input')?.kind.units, Units.Rpm);
  assert.equal(parseSensorFile('pwm1_input'), undefined);
  assert.equal(nameWord(' Package id 0 '), 'PACKAGE_ID_0');
  const temp = parseSensorFile('temp1_input')!.kind;
  assert.equal(sensorSignalName('CORETEMP', 'Package id 0', 'temp1', temp), 'CORETEMP_PACKAGE_ID_0_TEMP');
  assert.equal(sensorSignalName('INA238', undefined, 'temp1', temp), 'INA238_TEMP1_TEMP');
});

test('Intel: coretemp per package, a board chip in SI units', async () => {
  const { ctx } = fixtureContext('intel-2s');
  const pio = await platformWith(ctx, new HwmonBackend());
  assert.equal(await pio.readSignal('HWMON::CORETEMP_PACKAGE_ID_0_TEMP', Package, 0), 45);
  assert.equal(await pio.readSignal('HWMON::CORETEMP_PACKAGE_ID_1_TEMP', Package, 1), 47);
  assert.throws(
    () => pio.pushSignal('HWMON::CORETEMP_PACKAGE_ID_1_TEMP', Package, 0),
    /not available at package 0/,
  );
  assert.equal(await pio.readSignal('HWMON::CORETEMP_CORE_1_TEMP', Package, 1), -5);
  assert.equal(await pio.readSignal('HWMON::CORETEMP_CORE_1_TEMP', Package, 0), 43);
  assert.equal(await pio.readSignal('HWMON::INA238_VIN_VOLTAGE', Board, 0), 12.012);
  assert.equal(await pio.readSignal('HWMON::INA238_IIN_CURRENT', Board, 0), 20.5);
  assert.equal(await pio.readSignal('HWMON::INA238_PIN_POWER', Board, 0), 246.246);
  assert.equal(await pio.readSignal('HWMON::INA238_POWER2_POWER_AVERAGE', Board, 0), 240);
  assert.equal(await pio.readSignal('HWMON::INA238_ENERGY1_ENERGY', Board, 0), 987654.321);
  assert.equal(await pio.readSignal('HWMON::INA238_TEMP1_TEMP', Board, 0), 38.5);
  assert.equal(pio.signalInfo('HWMON::INA238_ENERGY1_ENERGY').units, Units.Joules);
  assert.equal(pio.signalInfo('HWMON::CORETEMP_CORE_0_TEMP').domain, Package);
  assert.equal(await pio.readSignal('CPU_PACKAGE_TEMPERATURE', Package, 1), 47);
  assert.equal(pio.signalInfo('CPU_PACKAGE_TEMPERATURE').aliasFor, 'HWMON::CPU_PACKAGE_TEMPERATURE');
});

test('AMD: k10temp chips map to packages in device order, not hwmon order', async () => {
  const { ctx } = fixtureContext('amd-epyc');
  const pio = await platformWith(ctx, new HwmonBackend());
  // hwmon1 sits on 0000:00:18.3 (socket 0), hwmon0 on 0000:00:19.3 (socket 1).
  assert.equal(await pio.readSignal('HWMON::K10TEMP_TCTL_TEMP', Package, 0), 55.25);
  assert.equal(await pio.readSignal('HWMON::K10TEMP_TCTL_TEMP', Package, 1), 52.125);
  assert.equal(await pio.readSignal('HWMON::K10TEMP_TCTL_TEMP', Board, 0), (55.25 + 52.125) / 2);
  // Without a Tdie channel, Tctl is the package temperature.
  assert.equal(await pio.readSignal('CPU_PACKAGE_TEMPERATURE', Package, 1), 52.125);
});

test('package temperature: coretemp "Package id"/"Physical id", else Tdie, else Tctl; never a core', () => {
  const temp = parseSensorFile('temp1_input')!.kind;
  const ch = (channel: string, label?: string, disabled?: string) => ({
    file: `${channel}_input`,
    channel,
    kind: temp,
    ...(label !== undefined ? { label } : {}),
    ...(disabled !== undefined ? { disabled } : {}),
  });
  const pick = (...channels: ReturnType<typeof ch>[]) => packageTemperatureChannel(channels)?.channel;
  assert.equal(pick(ch('temp2', 'Core 0'), ch('temp1', 'Package id 1')), 'temp1');
  assert.equal(pick(ch('temp1', 'Physical id 0')), 'temp1');
  assert.equal(pick(ch('temp1', 'Tctl'), ch('temp2', 'Tdie'), ch('temp3', 'Tccd1')), 'temp2');
  assert.equal(pick(ch('temp1', 'Tctl'), ch('temp3', 'Tccd1')), 'temp1');
  assert.equal(pick(ch('temp2', 'Core 0'), ch('temp3', 'Tccd1')), undefined);
  assert.equal(
    pick(ch('temp1', 'Package id 0', 'temp1_enable is 0')),
    undefined,
    'a disabled channel is not read',
  );
  const volts = { ...ch('in1', 'Package id 0'), kind: parseSensorFile('in1_input')!.kind };
  assert.equal(pick(volts), undefined, 'only temperatures');
});

test('a garbled sensor file is NaN in a batch and an error in a single read', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  const pio = await platformWith(ctx, new HwmonBackend());
  const h = pio.pushSignal('HWMON::INA238_PIN_POWER', Board, 0);
  writeFileSync(join(root, 'sys/class/hwmon/hwmon2/power1_input'), 'N/A\n');
  await pio.readBatch();
  assert.ok(Number.isNaN(pio.sample(h)));
  await assert.rejects(
    pio.readSignal('HWMON::INA238_PIN_POWER', Board, 0),
    /power1_input: expected an integer, found "N\/A"/,
  );
});

test('an unreadable sensor names the file and the reason for an unprivileged user', {
  skip: asTestUsers,
}, async () => {
  const { root } = fixtureContext('intel-2s');
  chmodSync(root, 0o755);
  chmodSync(join(root, 'sys/class/hwmon/hwmon2/energy1_input'), 0o400);
  const user = ensureUser('joulegate-energy');
  const r = await run(
    'env',
    [
      `JOULEGATE_SYSROOT=${root}`,
      process.execPath,
      CLI,
      'read',
      'HWMON::INA238_ENERGY1_ENERGY',
      'board',
      '0',
    ],
    {
      prefix: asUser(user),
    },
  );
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /hwmon2\/energy1_input: permission denied/);
});

test('an unreadable label or enable file is a diagnostic, not a silent default', {
  skip: asTestUsers,
}, async () => {
  const { root } = fixtureContext('intel-2s');
  chmodSync(root, 0o755);
  writeFileSync(join(root, 'sys/class/hwmon/hwmon2/temp1_enable'), '0\n');
  chmodSync(join(root, 'sys/class/hwmon/hwmon2/temp1_enable'), 0o400);
  chmodSync(join(root, 'sys/class/hwmon/hwmon2/in0_label'), 0o400);
  const user = ensureUser('joulegate-energy');
  const r = await run('env', [`JOULEGATE_SYSROOT=${root}`, process.execPath, CLI, 'sensors', '--all'], {
    prefix: asUser(user),
  });
  assert.match(r.stdout + r.stderr, /hwmon2\/temp1_enable: permission denied/);
  assert.match(r.stdout + r.stderr, /hwmon2\/in0_label: permission denied/);
});

/** node_exporter's expected values: `metric{k="v",…} value` lines of e2e-output.txt. */
function exporterExpectations(metric: string): { labels: Record<string, string>; value: number }[] {
  const text = readFileSync(join(CAPTURES_DIR, 'node_exporter/e2e-output.txt'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`))
    .map((line) => {
      const m = /^[a-z_]+\{(.*)\} (\S+)$/.exec(line)!;
      const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
      return { labels, value: Number(m[2]) };
    });
}

/** node_exporter's chip id (from the device path, else `name`) → the hwmon directory it read. */
const EXPORTER_CHIP_DIRS: Record<string, string> = {
  platform_coretemp_0: 'hwmon0',
  platform_coretemp_1: 'hwmon1',
  platform_applesmc_768: 'hwmon2',
  nct6779: 'hwmon3',
  hwmon4: 'hwmon4',
  platform_asus_nb_wmi_asus: 'hwmon6',
  platform_asus_nb_wmi_asus_wmi_sensors: 'hwmon7',
  ieee80211_phy0_mt7996_phy0_0: 'hwmon8',
  ieee80211_phy0_mt7996_phy0_1: 'hwmon9',
  ieee80211_phy0_mt7996_phy0_2: 'hwmon10',
};

/** Files of one directory and the `_label`/`_enable` texts, as the backend hands them to the parser. */
function listing(dir: string): { files: string[]; texts: Map<string, string> } {
  const files = readdirSync(dir).sort();
  const texts = new Map(
    files.filter((f) => /_(label|enable)$/.test(f)).map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
  );
  return { files, texts };
}

test('parser on the node_exporter capture: temperatures, voltages and fans equal node_exporter', () => {
  const root = captureSysroot('node_exporter');
  const metrics = ['node_hwmon_temp_celsius', 'node_hwmon_in_volts', 'node_hwmon_fan_rpm'];
  let compared = 0;
  for (const metric of metrics) {
    for (const { labels, value } of exporterExpectations(metric)) {
      const hwmon = join(root, 'sys/class/hwmon', EXPORTER_CHIP_DIRS[labels.chip!]!);
      // applesmc keeps its fans in the device directory, as older drivers do.
      const dirs = [hwmon, join(hwmon, 'device')].filter((d) => existsSync(d));
      const found = dirs.flatMap((dir) => {
        const { files, texts } = listing(dir);
        return parseChannels(files, texts)
          .filter((c) => c.channel === labels.sensor)
          .map((c) => parseSigned(readFileSync(join(dir, c.file), 'utf8'), c.file) / c.kind.divisor);
      });
      assert.deepEqual(found, [value], `${metric} ${labels.chip} ${labels.sensor}`);
      compared++;
    }
  }
  assert.ok(compared >= 20, `compared ${compared} values`);
});

test('parser: chip names from name, device/name, the device path, or the directory', () => {
  const root = captureSysroot('node_exporter');
  const sources = (entry: string) => {
    const dir = join(root, 'sys/class/hwmon', entry);
    const read = (f: string) => {
      try {
        return readFileSync(join(dir, f), 'utf8');
      } catch {
        return undefined;
      }
    };
    const name = read('name');
    const deviceName = read('device/name');
    return { dir, ...(name ? { name } : {}), ...(deviceName ? { deviceName } : {}) };
  };
  for (const { labels } of exporterExpectations('node_hwmon_chip_names')) {
    const entry = EXPORTER_CHIP_DIRS[labels.chip!]!;
    assert.equal(chipName(sources(entry)), labels.chip_name, entry);
  }
  assert.equal(chipName(sources('hwmon2')), 'applesmc', 'device/name when the chip has no name');
  assert.equal(chipName(sources('hwmon4')), 'hwmon4', 'the directory when nothing names it');
  assert.equal(
    chipName({ dir: '/x/hwmon7', devicePath: '/sys/devices/platform/applesmc.768' }),
    'platform_applesmc.768',
  );
  assert.equal(
    chipName({ dir: '/x/hwmon7', name: ' \n', devicePath: '/sys/devices/pci0000:00/0000:00:18.3' }),
    'pci0000:00_0000:00:18.3',
  );
});

test('parser: thermal zones of both captures equal node_exporter and prometheus/procfs', () => {
  const zones = (root: string) => {
    const base = join(root, 'sys/class/thermal');
    return readdirSync(base)
      .map((entry) => ({ entry, zone: parseZoneEntry(entry) }))
      .filter((z) => z.zone !== undefined)
      .map((z) => ({
        zone: z.zone!,
        type: readFileSync(join(base, z.entry, 'type'), 'utf8').trim(),
        celsius: parseSigned(readFileSync(join(base, z.entry, 'temp'), 'utf8'), 'temp') / 1e3,
      }));
  };
  const exporter = exporterExpectations('node_thermal_zone_temp').map(({ labels, value }) => ({
    zone: Number(labels.zone),
    type: labels.type!,
    celsius: value,
  }));
  assert.deepEqual(zones(captureSysroot('node_exporter')), exporter);
  // prometheus/procfs sysfs/class_thermal_test.go expects these two zones (temp in m°C).
  assert.deepEqual(zones(captureSysroot('procfs')), [
    { zone: 0, type: 'bcm2835_thermal', celsius: 49.925 },
    { zone: 1, type: 'acpitz', celsius: -44 },
  ]);
  assert.equal(parseZoneEntry('cooling_device0'), undefined);
  assert.deepEqual(thermalZoneSignalNames(['acpitz', 'x86_pkg_temp', 'acpitz']), [
    'THERMAL__ACPITZ__0_TEMP',
    'THERMAL__X86_PKG_TEMP_TEMP',
    'THERMAL__ACPITZ__1_TEMP',
  ]);
});

test('node_exporter capture through the backend: names, packages, fans and zones', async () => {
  const sysroot = new Sysroot(captureSysroot('node_exporter'));
  const pio = await platformWith({ sysroot, topology: loadTopology(sysroot) }, new HwmonBackend());
  const temp = (chip: string, sensor: string) =>
    exporterExpectations('node_hwmon_temp_celsius').find(
      (e) => e.labels.chip === chip && e.labels.sensor === sensor,
    )!.value;
  // Both coretemp chips say "Physical id 0": device order (coretemp.0, coretemp.1) decides instead.
  assert.equal(
    await pio.readSignal('HWMON::CORETEMP_PHYSICAL_ID_0_TEMP', Package, 0),
    temp('platform_coretemp_0', 'temp1'),
  );
  assert.equal(
    await pio.readSignal('HWMON::CORETEMP_CORE_3_TEMP', Package, 1),
    temp('platform_coretemp_1', 'temp5'),
  );
  // hwmon4 has neither name nor device, and labels both channels "foosensor": neither is lost.
  assert.equal(
    await pio.readSignal('HWMON::HWMON4_FOOSENSOR__TEMP1_TEMP', Board, 0),
    temp('hwmon4', 'temp1'),
  );
  assert.equal(
    await pio.readSignal('HWMON::HWMON4_FOOSENSOR__TEMP2_TEMP', Board, 0),
    temp('hwmon4', 'temp2'),
  );
  assert.ok(!pio.signalNames().includes('HWMON::HWMON4_FOOSENSOR_TEMP'), 'temperatures are not summed');
  const rpm = (chip: string, sensor: string) =>
    exporterExpectations('node_hwmon_fan_rpm').find(
      (e) => e.labels.chip === chip && e.labels.sensor === sensor,
    )!.value;
  assert.equal(
    await pio.readSignal('HWMON::APPLESMC_RIGHT_SIDE_FAN_SPEED', Board, 0),
    rpm('platform_applesmc_768', 'fan2'),
  );
  assert.equal(await pio.readSignal('HWMON::NCT6779_FAN2_FAN_SPEED', Board, 0), rpm('nct6779', 'fan2'));
  assert.equal(pio.signalInfo('HWMON::NCT6779_FAN2_FAN_SPEED').units, Units.Rpm);
  assert.equal(pio.signalInfo('HWMON::NCT6779_FAN2_FAN_SPEED').feeds, 'FAN_SPEED');
  // hwmon4's clocks (amdgpu-style freqN_input in Hz); node_exporter reports them in MHz by label.
  for (const { labels, value } of exporterExpectations('node_hwmon_freq_freq_mhz')) {
    const signal = `HWMON::HWMON4_${labels.sensor!.toUpperCase()}_FREQUENCY`;
    assert.equal(await pio.readSignal(signal, Board, 0), value * 1e6, signal);
    assert.equal(pio.signalInfo(signal).units, Units.Hertz);
  }
  // coretemp's package channel is also the catalogue's package temperature, per package.
  assert.equal(
    await pio.readSignal('CPU_PACKAGE_TEMPERATURE', Package, 0),
    temp('platform_coretemp_0', 'temp1'),
  );
  assert.equal(
    await pio.readSignal('CPU_PACKAGE_TEMPERATURE', Package, 1),
    temp('platform_coretemp_1', 'temp1'),
  );
  const [zone] = exporterExpectations('node_thermal_zone_temp');
  assert.equal(await pio.readSignal('HWMON::THERMAL__CPU_THERMAL_TEMP', Board, 0), zone!.value);
  assert.equal(pio.signalInfo('HWMON::THERMAL__CPU_THERMAL_TEMP').units, Units.Celsius);
});

/** Writes `files` (path under the sysroot → content) and symlinks (`→` prefix marks a link target). */
function writeTree(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    const full = join(root, path);
    mkdirSync(dirname(full), { recursive: true });
    rmSync(full, { recursive: true, force: true });
    if (content.startsWith('→')) symlinkSync(content.slice(1), full);
    else writeFileSync(full, content);
  }
}

test('parser: duplicate labels are kept apart, power and energy also summed', () => {
  const { files, texts } = {
    files: ['power1_input', 'power2_input', 'in1_input', 'in2_input', 'temp1_input', 'power1_label'],
    texts: new Map([
      ['power1_label', 'VDD\n'],
      ['power2_label', 'VDD\n'],
      ['in1_label', 'VDD\n'],
      ['in2_label', 'VDD\n'],
      ['temp1_label', 'VDD_POWER\n'],
    ]),
  };
  const named = nameSensors('INA3221', parseChannels(files, texts));
  const byName = Object.fromEntries(named.map((n) => [n.name, n.channels.map((c) => c.file)]));
  assert.deepEqual(byName, {
    INA3221_VDD__POWER1_POWER: ['power1_input'],
    INA3221_VDD__POWER2_POWER: ['power2_input'],
    INA3221_VDD_POWER: ['power1_input', 'power2_input'],
    INA3221_VDD__IN1_VOLTAGE: ['in1_input'],
    INA3221_VDD__IN2_VOLTAGE: ['in2_input'],
    INA3221_VDD_POWER_TEMP: ['temp1_input'],
  });
  assert.equal(new Set(named.map((n) => n.name)).size, named.length);
});

test('parser: amdgpu’s fan1_enable is its fan-control mode, not a sensor switch', () => {
  // amdgpu_pm.c amdgpu_hwmon_get_fan1_enable: 0 while the firmware drives the fan (automatic);
  // fan1_input reads the speed either way (LACT's rx5700xt capture: fan1_enable 0, fan1_input 29).
  const files = ['fan1_input', 'temp1_input'];
  const texts = new Map([
    ['fan1_enable', '0\n'],
    ['temp1_enable', '0\n'],
  ]);
  const disabled = (chip?: string) =>
    parseChannels(files, texts, chip).map((c) => [c.channel, c.disabled !== undefined]);
  assert.deepEqual(disabled('amdgpu'), [
    ['fan1', false],
    ['temp1', true],
  ]);
  assert.deepEqual(disabled('amdgpu\n'), disabled('amdgpu'));
  for (const other of ['nct6779', undefined])
    assert.deepEqual(disabled(other), [
      ['fan1', true],
      ['temp1', true],
    ]);
});

test('parser: enable files, Physical id labels, package assignment, chip indexing', () => {
  const channels = parseChannels(
    ['temp1_input', 'temp2_input', 'temp3_input', 'pwm1_enable'],
    new Map([
      ['temp1_enable', '0\n'],
      ['temp2_enable', '1\n'],
      ['pwm1_enable', '0\n'],
    ]),
  );
  assert.deepEqual(
    channels.map((c) => [c.channel, c.disabled !== undefined]),
    [
      ['temp1', true],
      ['temp2', false],
      ['temp3', false],
    ],
  );
  assert.match(channels[0]!.disabled!, /temp1_enable is 0/);
  assert.equal(packageFromLabel('Physical id 1'), 1);
  assert.equal(packageFromLabel('Package id 3 '), 3);
  assert.equal(packageFromLabel('Core 1'), undefined);
  const twoSockets = new Map([
    [0, 0],
    [1, 1],
  ]);
  assert.deepEqual(assignPackages([1, 0], twoSockets), [1, 0], 'distinct labels decide');
  assert.deepEqual(assignPackages([0, 0], twoSockets), [0, 1], 'a repeated label falls back to device order');
  assert.deepEqual(assignPackages([undefined, undefined, undefined], twoSockets), [0, 1, undefined]);
  assert.deepEqual(indexedWords(['INA3221', 'INA3221_1', 'INA3221', 'NVME']), [
    'INA3221__0',
    'INA3221_1',
    'INA3221__1',
    'NVME',
  ]);
});

test('synthetic chips: summed rails, same-named chips by device order, enable=0, unnamed chips, Physical id', async () => {
  const { root, ctx } = fixtureContext('intel-2s');
  const hw = 'sys/class/hwmon';
  writeTree(root, {
    // Labels name the packages against the hwmon order: labels win.
    [`${hw}/hwmon0/temp1_label`]: 'Physical id 1\n',
    [`${hw}/hwmon1/temp1_label`]: 'Physical id 0\n',
    // Two rails labelled alike.
    [`${hw}/hwmon3/name`]: 'ina3221\n',
    [`${hw}/hwmon3/device`]: '→../../../devices/i2c/1-0041',
    'sys/devices/i2c/1-0041/.keep': '',
    [`${hw}/hwmon3/power1_input`]: '50000000\n',
    [`${hw}/hwmon3/power1_label`]: 'VDD\n',
    [`${hw}/hwmon3/power2_input`]: '30000000\n',
    [`${hw}/hwmon3/power2_label`]: 'VDD\n',
    // A second ina3221 whose device comes first although its hwmon number is higher.
    [`${hw}/hwmon4/name`]: 'ina3221\n',
    [`${hw}/hwmon4/device`]: '→../../../devices/i2c/1-0040',
    'sys/devices/i2c/1-0040/.keep': '',
    [`${hw}/hwmon4/power1_input`]: '7000000\n',
    // A chip really named like an indexed one.
    [`${hw}/hwmon5/name`]: 'ina3221_1\n',
    [`${hw}/hwmon5/power1_input`]: '9000000\n',
    // A switched-off channel.
    [`${hw}/hwmon6/name`]: 'nct6798\n',
    [`${hw}/hwmon6/temp1_input`]: '40000\n',
    [`${hw}/hwmon6/temp1_enable`]: '0\n',
    [`${hw}/hwmon6/temp2_input`]: '41000\n',
    [`${hw}/hwmon6/temp2_enable`]: '1\n',
    // Nameless chips: one with a device, one with nothing.
    [`${hw}/hwmon7/device`]: '→../../../devices/platform/foo.3',
    'sys/devices/platform/foo.3/.keep': '',
    [`${hw}/hwmon7/temp1_input`]: '33000\n',
    [`${hw}/hwmon8/temp1_input`]: '34000\n',
  });
  const backend = new HwmonBackend();
  const pio = await platformWith(ctx, backend);
  const read = (name: string) => pio.readSignal(`HWMON::${name}`, Board, 0);
  // hwmon1 (Core 1 at -5 °C) says "Physical id 0".
  assert.equal(await pio.readSignal('HWMON::CORETEMP_CORE_1_TEMP', Package, 0), -5);
  assert.equal(await pio.readSignal('HWMON::CORETEMP_PHYSICAL_ID_1_TEMP', Package, 1), 45);
  assert.equal(await read('INA3221__1_VDD__POWER1_POWER'), 50);
  assert.equal(await read('INA3221__1_VDD__POWER2_POWER'), 30);
  assert.equal(await read('INA3221__1_VDD_POWER'), 80);
  assert.match(pio.signalInfo('HWMON::INA3221__1_VDD_POWER').description, /^Sum of the channels/);
  assert.equal(await read('INA3221__0_POWER1_POWER'), 7);
  assert.equal(await read('INA3221_1_POWER1_POWER'), 9);
  assert.equal(await read('NCT6798_TEMP2_TEMP'), 41);
  assert.ok(!pio.signalNames().includes('HWMON::NCT6798_TEMP1_TEMP'));
  const disabled = backend.diagnostics().find((d) => d.signal === 'HWMON::NCT6798_TEMP1_TEMP');
  assert.match(disabled?.reason ?? '', /hwmon6\/temp1_input: not read, temp1_enable is 0/);
  assert.equal(await read('PLATFORM_FOO_3_TEMP1_TEMP'), 33);
  assert.equal(await read('HWMON8_TEMP1_TEMP'), 34);
});

test('a per-package chip missing for one package loses that package only, and says so', async () => {
  const root = captureSysroot('node_exporter');
  rmSync(join(root, 'sys/class/hwmon/hwmon1')); // coretemp.1: package 1's chip
  const sysroot = new Sysroot(root);
  const pio = await platformWith({ sysroot, topology: loadTopology(sysroot) }, new HwmonBackend());
  assert.equal(await pio.readSignal('CPU_PACKAGE_TEMPERATURE', Package, 0), 55);
  const why = 'no coretemp chip for package 1 (found for package 0)';
  assert.equal(pio.whyUnavailable('HWMON::CORETEMP_CORE_0_TEMP', Package, 1), why);
  await assert.rejects(pio.readSignal('CPU_PACKAGE_TEMPERATURE', Package, 1), {
    message: new RegExp(`: ${why.replace(/[()]/g, '\\$&')}$`),
  });
});
