import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * A machine's shape read straight from a sysfs tree (a fixture or test sysroot), for tests to
 * state what a topology must look like without asking joulegate's own topology code.
 */

export interface SysfsShape {
  packages: number;
  /** Distinct (package, core id) pairs. */
  cores: number;
  cpus: number[];
  threadsPerCore: number;
  /** CPUs of each NUMA node, by node number. */
  numa: Map<number, number[]>;
}

const read = (path: string) => readFileSync(path, 'utf8').trim();

/** "0-3,8,10-11" → [0, 1, 2, 3, 8, 10, 11] */
export function cpuList(text: string): number[] {
  return text
    .split(',')
    .filter(Boolean)
    .flatMap((part) => {
      const [lo, hi = lo] = part.split('-').map(Number);
      return Array.from({ length: hi! - lo! + 1 }, (_, i) => lo! + i);
    });
}

export function sysfsShape(root: string): SysfsShape {
  const cpuDir = join(root, 'sys/devices/system/cpu');
  const cpus = cpuList(read(join(cpuDir, 'online')));
  const packages = new Set<string>();
  const cores = new Set<string>();
  for (const cpu of cpus) {
    const topo = join(cpuDir, `cpu${cpu}`, 'topology');
    const pkg = read(join(topo, 'physical_package_id'));
    packages.add(pkg);
    cores.add(`${pkg}/${read(join(topo, 'core_id'))}`);
  }
  const nodeDir = join(root, 'sys/devices/system/node');
  const numa = new Map<number, number[]>();
  for (const entry of readdirSync(nodeDir)) {
    const m = /^node(\d+)$/.exec(entry);
    if (m) numa.set(Number(m[1]), cpuList(read(join(nodeDir, entry, 'cpulist'))));
  }
  return { packages: packages.size, cores: cores.size, cpus, threadsPerCore: cpus.length / cores.size, numa };
}
