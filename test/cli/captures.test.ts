import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { commandsSucceed, scrapeChecked, sessionValues, sysrootEnv } from '../helpers/capture-commands.js';
import { CAPTURES_DIR, type CaptureName, captureSysroot } from '../helpers/captures.js';
import { runCli } from '../helpers/cli.js';
import { seriesValue } from '../helpers/exporter.js';
import { needsTool, requirements } from '../helpers/requirements.js';

/*
 * joulegate over real machines' files (node_exporter's and prometheus/procfs's test captures):
 * every command runs cleanly, and each quantity joulegate shows equals the value the capture's
 * own project expects of the same files. docs/captures.md tables the comparison.
 */

/** node_exporter's end-to-end output over its capture: the values it expects. */
const E2E = readFileSync(join(CAPTURES_DIR, 'node_exporter/e2e-output.txt'), 'utf8');

/** A series' value in node_exporter's output; `labels` must occur inside its braces. */
function e2eValue(metric: string, labels = ''): number {
  const line = E2E.split('\n').find(
    (l) =>
      (l.startsWith(`${metric}{`) && l.includes(labels)) || (labels === '' && l.startsWith(`${metric} `)),
  );
  assert.ok(line, `e2e-output.txt has ${metric}{${labels}}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** The CPUs of each package, from the capture's own topology files. */
function cpusOfPackage(root: string, cpus: number[]): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const cpu of cpus) {
    const file = join(root, `sys/devices/system/cpu/cpu${cpu}/topology/physical_package_id`);
    const pkg = Number(readFileSync(file, 'utf8'));
    out.set(pkg, [...(out.get(pkg) ?? []), cpu]);
  }
  return out;
}

/** The commands every capture passes, and the empty core-zone bound costs only that bound. */
async function commandsSucceedWithCoreZone(name: CaptureName) {
  const run = await commandsSucceed(name);
  assert.match(run.sensors, /constraint_0_max_power_uw: .*the largest power limit is not known/);
  assert.doesNotMatch(run.sensors, /; zone \/sys\/class\/powercap\/\S+ left out/);
  return run;
}

describe('node_exporter capture', { skip: requirements(needsTool('promtool')) }, () => {
  it('monitor, sensors and topo succeed; package 1 has no RAPL zone and is named as such', async () => {
    const { sensors, report } = await commandsSucceedWithCoreZone('node_exporter');
    assert.match(sensors, /CPU_ENERGY-package-0/);
    assert.doesNotMatch(sensors, /CPU_ENERGY-package-1/);
    const missing = /CPU_ENERGY package 1: no package RAPL zone with an energy counter for package 1/;
    assert.match(sensors, missing);
    assert.match(report, missing);
    assert.match(report, /cpu: counter, energy counters via POWERCAP \[CPU_ENERGY-package-0\]/);
    // `sensors --all` names each signal's missing package with its backend's reason.
    const all = await runCli(['sensors', '--all'], sysrootEnv(captureSysroot('node_exporter')));
    assert.equal(all.code, 0, all.stderr);
    assert.match(
      all.stdout,
      /POWERCAP 2 signals \(POWERCAP::CPU_ENERGY, POWERCAP::CPU_POWER\) at package 1: no package RAPL zone with an energy counter for package 1/,
    );
    assert.match(
      all.stdout,
      /\(POWERCAP::CPU_POWER_LIMIT, POWERCAP::CPU_POWER_LIMIT_ENABLE, POWERCAP::CPU_POWER_TIME_WINDOW\) at package 1: no package RAPL zone with a long-term power limit for package 1/,
    );
    assert.doesNotMatch(all.stdout, /HWMON .* at package/, 'both packages have their coretemp chip');
    // Its whole disks (sdi..sdn, with a device link) are not in its diskstats: disk bytes are unknown, not 0.
    assert.match(
      sensors,
      /DISK_READ_BYTES: none of the whole disks of \/sys\/block .* is in \/proc\/diskstats/,
    );
  });

  it('session reads what node_exporter reads: RAPL energy, MemTotal, cpufreq per CPU', async () => {
    const root = captureSysroot('node_exporter');
    const { values } = await sessionValues(root, [
      'CPU_ENERGY package 0',
      'POWERCAP::CPU_CORE_ENERGY package 0',
      'PROCFS::MEMORY_TOTAL board 0',
      'CPUFREQ::SCALING_CUR_FREQ cpu *',
      'CPUFREQ::SCALING_MIN_FREQ cpu *',
      'CPUFREQ::SCALING_MAX_FREQ cpu *',
    ]);
    const rapl = 'path="collector/fixtures/sys/class/powercap/intel-rapl:0';
    assert.equal(values.get('CPU_ENERGY-package-0'), e2eValue('node_rapl_package_joules_total', `${rapl}"`));
    assert.equal(
      values.get('POWERCAP::CPU_CORE_ENERGY-package-0'),
      e2eValue('node_rapl_core_joules_total', `${rapl}:0"`),
    );
    assert.equal(values.get('PROCFS::MEMORY_TOTAL'), e2eValue('node_memory_MemTotal_bytes'));
    const cpus = [0, 1, 2, 3];
    for (const cpu of cpus) {
      const label = `cpu="${cpu}"`;
      for (const [signal, metric] of [
        ['SCALING_CUR_FREQ', 'node_cpu_scaling_frequency_hertz'],
        ['SCALING_MIN_FREQ', 'node_cpu_scaling_frequency_min_hertz'],
        ['SCALING_MAX_FREQ', 'node_cpu_scaling_frequency_max_hertz'],
      ] as const) {
        assert.equal(
          values.get(`CPUFREQ::${signal}-cpu-${cpu}`),
          e2eValue(metric, label),
          `${signal} cpu ${cpu}`,
        );
      }
    }
  });

  it('session reads hwmon chips, fans, clocks and thermal zones as node_exporter does', async () => {
    const root = captureSysroot('node_exporter');
    // joulegate's request → node_exporter's series (metric, labels) and the factor between units.
    const pairs: [string, string, string, number][] = [
      [
        'CPU_PACKAGE_TEMPERATURE package 0',
        'node_hwmon_temp_celsius',
        'chip="platform_coretemp_0",sensor="temp1"',
        1,
      ],
      [
        'CPU_PACKAGE_TEMPERATURE package 1',
        'node_hwmon_temp_celsius',
        'chip="platform_coretemp_1",sensor="temp1"',
        1,
      ],
      [
        'HWMON::CORETEMP_CORE_0_TEMP package 0',
        'node_hwmon_temp_celsius',
        'chip="platform_coretemp_0",sensor="temp2"',
        1,
      ],
      [
        'HWMON::CORETEMP_CORE_3_TEMP package 1',
        'node_hwmon_temp_celsius',
        'chip="platform_coretemp_1",sensor="temp5"',
        1,
      ],
      [
        'HWMON::HWMON4_FOOSENSOR__TEMP1_TEMP board 0',
        'node_hwmon_temp_celsius',
        'chip="hwmon4",sensor="temp1"',
        1,
      ],
      [
        'HWMON::HWMON4_FOOSENSOR__TEMP2_TEMP board 0',
        'node_hwmon_temp_celsius',
        'chip="hwmon4",sensor="temp2"',
        1,
      ],
      [
        'HWMON::MT7996_PHY0_2_TEMP1_TEMP board 0',
        'node_hwmon_temp_celsius',
        'chip="ieee80211_phy0_mt7996_phy0_2",sensor="temp1"',
        1,
      ],
      ['HWMON::NCT6779_IN0_VOLTAGE board 0', 'node_hwmon_in_volts', 'chip="nct6779",sensor="in0"', 1],
      ['HWMON::NCT6779_IN1_VOLTAGE board 0', 'node_hwmon_in_volts', 'chip="nct6779",sensor="in1"', 1],
      ['HWMON::NCT6779_FAN2_FAN_SPEED board 0', 'node_hwmon_fan_rpm', 'chip="nct6779",sensor="fan2"', 1],
      [
        'HWMON::APPLESMC_LEFT_SIDE_FAN_SPEED board 0',
        'node_hwmon_fan_rpm',
        'chip="platform_applesmc_768",sensor="fan1"',
        1,
      ],
      [
        'HWMON::APPLESMC_RIGHT_SIDE_FAN_SPEED board 0',
        'node_hwmon_fan_rpm',
        'chip="platform_applesmc_768",sensor="fan2"',
        1,
      ],
      [
        'HWMON::HWMON4_SCLK_FREQUENCY board 0',
        'node_hwmon_freq_freq_mhz',
        'chip="hwmon4",sensor="sclk"',
        1e6,
      ],
      [
        'HWMON::HWMON4_MCLK_FREQUENCY board 0',
        'node_hwmon_freq_freq_mhz',
        'chip="hwmon4",sensor="mclk"',
        1e6,
      ],
      [
        'HWMON::THERMAL__CPU_THERMAL_TEMP board 0',
        'node_thermal_zone_temp',
        'type="cpu-thermal",zone="0"',
        1,
      ],
    ];
    const { values } = await sessionValues(
      root,
      pairs.map(([request]) => request),
    );
    for (const [request, metric, labels, factor] of pairs) {
      const [signal, domain, idx] = request.split(' ') as [string, string, string];
      const column = domain === 'board' ? signal : `${signal}-${domain}-${idx}`;
      assert.equal(values.get(column), e2eValue(metric, labels) * factor, request);
    }
  });

  it('exporter: promtool-clean; frequency per package is the mean of node_exporter’s per-CPU values', async () => {
    const root = captureSysroot('node_exporter');
    const { body } = await scrapeChecked(root);
    assert.ok(
      seriesValue(body, 'joulegate_package_energy_joules_total', 'node="capture",package="0"') !== undefined,
    );
    assert.equal(
      seriesValue(body, 'joulegate_package_energy_joules_total', 'node="capture",package="1"'),
      undefined,
      'no series for the package without RAPL',
    );
    for (const pkg of [0, 1]) {
      assert.equal(
        seriesValue(body, 'joulegate_package_temperature_celsius', `node="capture",package="${pkg}"`),
        e2eValue('node_hwmon_temp_celsius', `chip="platform_coretemp_${pkg}",sensor="temp1"`),
        `package ${pkg} temperature is coretemp's package channel`,
      );
    }
    for (const [pkg, cpus] of cpusOfPackage(root, [0, 1, 2, 3])) {
      const mean =
        cpus
          .map((cpu) => e2eValue('node_cpu_scaling_frequency_hertz', `cpu="${cpu}"`))
          .reduce((a, b) => a + b) / cpus.length;
      assert.equal(
        seriesValue(body, 'joulegate_cpu_frequency_hertz', `node="capture",package="${pkg}"`),
        mean,
      );
    }
  });
});

describe('prometheus/procfs capture', { skip: requirements(needsTool('promtool')) }, () => {
  it('monitor, sensors and topo succeed', async () => {
    const { sensors } = await commandsSucceedWithCoreZone('procfs');
    assert.match(sensors, /CPU_ENERGY-package-0/);
    // `intel-rapl:a` is zone 10 (the kernel names zones in hex; procfs's TestNewRaplValues has
    // Index 10) and measures package 10, which this machine does not have: named, not dropped.
    assert.match(sensors, /intel-rapl:a: package 10 is not online/);
  });

  it('session reads what procfs’s Go tests expect: RAPL energy, MemTotal, cpufreq', async () => {
    const root = captureSysroot('procfs');
    const { values, stderr } = await sessionValues(root, [
      'CPU_ENERGY package 0',
      'PROCFS::MEMORY_TOTAL board 0',
      'CPUFREQ::SCALING_CUR_FREQ cpu *',
      'CPUFREQ::SCALING_MIN_FREQ cpu *',
      'CPUFREQ::SCALING_MAX_FREQ cpu *',
      'CPUFREQ::CPUINFO_MIN_FREQ cpu *',
      'CPUFREQ::CPUINFO_MAX_FREQ cpu *',
      'HWMON::THERMAL__BCM2835_THERMAL_TEMP board 0',
      'HWMON::THERMAL__ACPITZ_TEMP board 0',
    ]);
    // sysfs/class_thermal_test.go TestClassThermalZoneStats: zone 0 "bcm2835_thermal" Temp 49925,
    // zone 1 "acpitz" Temp -44000 (m°C).
    assert.equal(values.get('HWMON::THERMAL__BCM2835_THERMAL_TEMP'), 49925 / 1e3);
    assert.equal(values.get('HWMON::THERMAL__ACPITZ_TEMP'), -44000 / 1e3);
    // sysfs/class_powercap_test.go TestNewRaplValues: zones[0].GetEnergyMicrojoules() == 240422366267
    assert.equal(values.get('CPU_ENERGY-package-0'), 240422366267 / 1e6);
    // meminfo_test.go TestMeminfo: MemTotalBytes: 16042172416
    assert.equal(values.get('PROCFS::MEMORY_TOTAL'), 16042172416);
    // sysfs/system_cpu_test.go TestSystemCpufreq, in kHz: CPU "0" ScalingCurrentFrequency 1219917,
    // ScalingMinimumFrequency 800000, ScalingMaximumFrequency 2400000, CpuinfoMinimumFrequency
    // 800000, CpuinfoMaximumFrequency 2400000; CPU "1" (cpu1/cpufreq, no policy) ScalingCurrent-
    // Frequency nil, ScalingMinimumFrequency 1200000, ScalingMaximumFrequency 3300000,
    // CpuinfoMinimumFrequency 1200000, CpuinfoMaximumFrequency 3300000.
    const kHz = 1000;
    assert.equal(values.get('CPUFREQ::SCALING_CUR_FREQ-cpu-0'), 1219917 * kHz);
    assert.equal(values.get('CPUFREQ::SCALING_MIN_FREQ-cpu-0'), 800000 * kHz);
    assert.equal(values.get('CPUFREQ::SCALING_MAX_FREQ-cpu-0'), 2400000 * kHz);
    assert.equal(values.get('CPUFREQ::CPUINFO_MIN_FREQ-cpu-0'), 800000 * kHz);
    assert.equal(values.get('CPUFREQ::CPUINFO_MAX_FREQ-cpu-0'), 2400000 * kHz);
    assert.equal(values.get('CPUFREQ::SCALING_MIN_FREQ-cpu-1'), 1200000 * kHz);
    assert.equal(values.get('CPUFREQ::SCALING_MAX_FREQ-cpu-1'), 3300000 * kHz);
    assert.equal(values.get('CPUFREQ::CPUINFO_MIN_FREQ-cpu-1'), 1200000 * kHz);
    assert.equal(values.get('CPUFREQ::CPUINFO_MAX_FREQ-cpu-1'), 3300000 * kHz);
    // Where procfs has nil, joulegate has no column and says why.
    assert.equal(values.has('CPUFREQ::SCALING_CUR_FREQ-cpu-1'), false);
    assert.match(
      stderr,
      /left out: CPUFREQ::SCALING_CUR_FREQ cpu 1: .*cpu1\/cpufreq\/scaling_cur_freq is missing/,
    );
  });

  it('exporter: promtool-clean; package frequency is the mean of the CPUs that have one', async () => {
    const root = captureSysroot('procfs');
    const { body, log } = await scrapeChecked(root);
    // sysfs/class_powercap_test.go: 240422366267 µJ; the exported counter starts at the exporter's
    // start, so only its presence compares.
    assert.ok(
      seriesValue(body, 'joulegate_package_energy_joules_total', 'node="capture",package="0"') !== undefined,
    );
    // Package 0 holds cpus 0-2 and only cpu 0 has scaling_cur_freq (TestSystemCpufreq: CPU "1" nil):
    // a package mean over one CPU of three would mislead, so it is not exported, and the log says why.
    assert.equal(seriesValue(body, 'joulegate_cpu_frequency_hertz', 'node="capture",package="0"'), undefined);
    assert.match(
      log,
      /CPU_FREQUENCY_STATUS package 0: not exported \(.*cpu1\/cpufreq\/scaling_cur_freq is missing\)/,
    );
  });
});
