import { cpSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';
import { unpackTtar } from './ttar.js';

/** Real sysfs/procfs captures other projects publish, vendored under test/fixtures/captures. */
export const CAPTURES_DIR = new URL('../fixtures/captures/', import.meta.url).pathname;

/** telegraf's `inputs.temp` test cases (plugins/inputs/temp/testcases/<case>). */
export const TELEGRAF_CASES = ['general', 'with_device_tag', 'with_name'] as const;
export type TelegrafCase = (typeof TELEGRAF_CASES)[number];

export type CaptureName = 'node_exporter' | 'procfs' | 'codecarbon' | `telegraf/${TelegrafCase}` | 'lact';

/**
 * A sysroot (`sys/`, `proc/`) unpacked from one capture into a fresh temp dir, for
 * JOULEGATE_SYSROOT. Each call unpacks anew, so a test may change its copy.
 */
export function captureSysroot(name: CaptureName): string {
  const root = tempDir(`jg-capture-${name.replace(/\W/g, '_')}-`);
  if (name === 'node_exporter') {
    unpackTtar(join(CAPTURES_DIR, 'node_exporter/sys.ttar'), root);
    cpSync(join(CAPTURES_DIR, 'node_exporter/proc'), join(root, 'proc'), {
      recursive: true,
      verbatimSymlinks: true,
    });
  } else if (name === 'procfs') {
    const unpacked = unpackedIn(root, 'procfs/fixtures.ttar');
    cpSync(join(unpacked, 'fixtures'), root, { recursive: true, verbatimSymlinks: true });
  } else if (name === 'codecarbon') {
    // The archive is codecarbon's tests/test_data/rapl, a copy of /sys/devices/virtual/powercap/intel-rapl
    // (its links' depths say so); /sys/class/powercap links to each zone, as the kernel's class does.
    const unpacked = unpackedIn(root, 'codecarbon/rapl.ttar');
    const rapl = 'devices/virtual/powercap/intel-rapl';
    cpSync(join(unpacked, 'rapl'), join(root, 'sys', rapl), { recursive: true, verbatimSymlinks: true });
    const zones = ['intel-rapl:0', 'intel-rapl:0/intel-rapl:0:0', 'intel-rapl:0/intel-rapl:0:1'];
    zones.push('intel-rapl:0/intel-rapl:0:2', 'intel-rapl:1');
    classLinks(root, 'powercap', [
      ['intel-rapl', rapl],
      ...zones.map((z): [string, string] => [z.replace(/^.*\//, ''), `${rapl}/${z}`]),
    ]);
    addOneCpu(root);
  } else if (name.startsWith('telegraf/')) {
    const unpacked = unpackedIn(root, 'telegraf/testcases.ttar');
    const kase = name.slice('telegraf/'.length);
    cpSync(join(unpacked, 'testcases', kase, 'sys'), join(root, 'sys'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    addOneCpu(root);
  } else {
    lactSysroot(root);
    addOneCpu(root);
  }
  return root;
}

function unpackedIn(root: string, archive: string): string {
  const unpacked = join(root, 'unpacked');
  mkdirSync(unpacked);
  unpackTtar(join(CAPTURES_DIR, archive), unpacked);
  return unpacked;
}

/** `/sys/class/<cls>/<entry>` → `../../<target>`, target relative to /sys (`devices/…`), as the kernel links. */
function classLinks(root: string, cls: string, links: [entry: string, target: string][]): void {
  mkdirSync(join(root, 'sys/class', cls), { recursive: true });
  for (const [entry, target] of links) symlinkSync(`../../${target}`, join(root, 'sys/class', cls, entry));
}

/**
 * NOT from any capture: a one-CPU, one-package machine (`online` = 0, cpu0 in package 0, core 0),
 * for captures that hold no CPU topology (joulegate's topology needs at least one online CPU;
 * src/platform/topology.ts reads `online` and each CPU's topology/physical_package_id, core_id).
 */
export function addOneCpu(root: string): void {
  const cpu = join(root, 'sys/devices/system/cpu');
  mkdirSync(join(cpu, 'cpu0/topology'), { recursive: true });
  writeFileSync(join(cpu, 'online'), '0\n');
  writeFileSync(join(cpu, 'cpu0/topology/physical_package_id'), '0\n');
  writeFileSync(join(cpu, 'cpu0/topology/core_id'), '0\n');
}

/** One GPU of LACT's snapshots and where the lact sysroot puts it. */
export interface LactGpu {
  /** `amd/rx6900xt`: the folder under LACT's tests/snapshots. */
  gpu: string;
  /** `card0/device/hwmon/hwmon5`: its hwmon directory, as LACT stores it. */
  hwmonDir: string;
  /** `/sys/class/hwmon/hwmon9`: the chip's entry in the sysroot. */
  classEntry: string;
  /** `/sys/devices/pci0000:00/0000:00:0a.0`: the PCI device the sysroot gives it. */
  device: string;
}

/**
 * LACT's GPUs in the sysroot's order (vendor/gpu sorted): the i-th is PCI device 0000:00:<i+1>.0
 * and chip hwmon<i>. The layout is ours: LACT stores each GPU alone (`card<N>/device/hwmon/hwmon<M>`,
 * with the user's own numbers, which collide between GPUs) and keeps no links.
 */
export function lactGpus(): LactGpu[] {
  const base = join(CAPTURES_DIR, 'lact/snapshots');
  const gpus = readdirSync(base)
    .sort()
    .flatMap((vendor) =>
      readdirSync(join(base, vendor))
        .sort()
        .map((g) => `${vendor}/${g}`),
    );
  return gpus.map((gpu, i) => {
    const card = readdirSync(join(base, gpu)).find((e) => /^card\d+$/.test(e))!;
    const hwmon = readdirSync(join(base, gpu, card, 'device/hwmon')).find((e) => /^hwmon\d+$/.test(e))!;
    return {
      gpu,
      hwmonDir: `${card}/device/hwmon/${hwmon}`,
      classEntry: `/sys/class/hwmon/hwmon${i}`,
      device: `/sys/devices/pci0000:00/0000:00:${(i + 1).toString(16).padStart(2, '0')}.0`,
    };
  });
}

/**
 * Every LACT GPU's device (its `uevent` and hwmon directory, renumbered) under its PCI device,
 * with the links a kernel makes: /sys/class/hwmon/hwmonN → the chip, the chip's `device` → the GPU.
 */
function lactSysroot(root: string): void {
  const base = join(CAPTURES_DIR, 'lact/snapshots');
  for (const g of lactGpus()) {
    const device = join(root, g.device);
    const entry = g.classEntry.replace(/^.*\//, '');
    const chip = join(device, 'hwmon', entry);
    mkdirSync(join(device, 'hwmon'), { recursive: true });
    cpSync(join(base, g.gpu, g.hwmonDir.replace(/\/hwmon\/[^/]+$/, ''), 'uevent'), join(device, 'uevent'));
    cpSync(join(base, g.gpu, g.hwmonDir), chip, { recursive: true });
    symlinkSync(`../../../${g.device.replace(/^.*\//, '')}`, join(chip, 'device'));
    classLinks(root, 'hwmon', [[entry, `${g.device.replace(/^\/sys\//, '')}/hwmon/${entry}`]]);
  }
}
