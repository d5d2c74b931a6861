import { InvalidArgumentError, ParseError } from '../platform/errors.js';
import { parseCpuList, type Sysroot } from '../platform/sysroot.js';
import { readIfPresent, subdirectories } from './kernel-files.js';
import { type ProcessStat, parsePidList } from './proc-stat.js';
import { readProcesses } from './process-tree.js';

/**
 * A cgroup as attribution reads it. Paths are absolute on the node (the sysroot adds its prefix).
 * - v2 (unified): one directory holds cpu.stat, cpuset.cpus.effective and cgroup.procs.
 * - v1 (legacy): CPU time from the cpuacct hierarchy, pinning from the cpuset hierarchy.
 */
export type CgroupLocation =
  | { version: 2; dir: string }
  | { version: 1; cpuacctDir: string; cpusetDir?: string };

export const CGROUP_ROOT = '/sys/fs/cgroup';
/** Where v1 mounts the CPU accounting controller (co-mounted with cpu on many distributions). */
export const CPUACCT_MOUNTS = ['cpuacct', 'cpu,cpuacct', 'cpuacct,cpu'] as const;

export interface CgroupReading {
  /** Total CPU time of the cgroup's processes since it was created, µs. */
  usageUs: number;
  /** CPUs it may run on (cpuset); undefined when not restricted. */
  cpus?: number[];
  /** Its processes (in it and in its descendants), for placing its time on packages. */
  processes: ProcessStat[];
  warnings: string[];
}

/** usage_usec of a cgroup v2 cpu.stat ("usage_usec 123\nuser_usec …"). */
export function parseCpuStatUsage(text: string, file = 'cpu.stat'): number {
  const m = /^usage_usec\s+(\d+)\s*$/m.exec(text);
  if (!m) throw new ParseError(`${file}: no usage_usec line`);
  return Number(m[1]);
}

/** cpuacct.usage of cgroup v1: ns → µs. */
export function parseCpuacctUsage(text: string, file = 'cpuacct.usage'): number {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed))
    throw new ParseError(`${file}: expected a number of ns, found "${trimmed.slice(0, 40)}"`);
  return Number(trimmed) / 1000;
}

/**
 * A cgroup path as a user gives it — "/system.slice/x.service" (as in /proc/<pid>/cgroup) or
 * "/sys/fs/cgroup/…" — to a location on this node. `..` is refused: a path names a cgroup, it
 * does not walk the file system.
 */
export function resolveCgroupPath(root: Sysroot, path: string): CgroupLocation {
  if (!path.startsWith('/')) throw new InvalidArgumentError(`cgroup path "${path}" must be absolute`);
  if (path.split('/').some((part) => part === '..' || part === '.')) {
    throw new InvalidArgumentError(`cgroup path "${path}" may not contain "." or ".." components`);
  }
  const trimmed = path.replace(/\/+$/, '');
  const relative = trimmed.startsWith(`${CGROUP_ROOT}/`) ? trimmed.slice(CGROUP_ROOT.length) : trimmed;
  const fullGiven = trimmed === CGROUP_ROOT || trimmed.startsWith(`${CGROUP_ROOT}/`);
  const candidates: CgroupLocation[] = [];
  if (fullGiven) candidates.push(...locationsOfDirectory(trimmed === CGROUP_ROOT ? CGROUP_ROOT : trimmed));
  // Unified hierarchy at the root, or at /sys/fs/cgroup/unified on hybrid systems.
  candidates.push({ version: 2, dir: `${CGROUP_ROOT}${relative}` });
  candidates.push({ version: 2, dir: `${CGROUP_ROOT}/unified${relative}` });
  for (const mount of CPUACCT_MOUNTS) {
    candidates.push({
      version: 1,
      cpuacctDir: `${CGROUP_ROOT}/${mount}${relative}`,
      cpusetDir: `${CGROUP_ROOT}/cpuset${relative}`,
    });
  }
  const found = candidates.find((c) => hasUsage(root, c));
  if (!found)
    throw new Error(`cgroup ${path}: not found (no cpu.stat or cpuacct.usage under ${CGROUP_ROOT})`);
  return found;
}

/** A directory given in full: v2 if it holds cpu.stat, v1 if it is inside a cpuacct mount. */
function locationsOfDirectory(dir: string): CgroupLocation[] {
  for (const mount of CPUACCT_MOUNTS) {
    const prefix = `${CGROUP_ROOT}/${mount}`;
    if (dir === prefix || dir.startsWith(`${prefix}/`)) {
      return [{ version: 1, cpuacctDir: dir, cpusetDir: `${CGROUP_ROOT}/cpuset${dir.slice(prefix.length)}` }];
    }
  }
  return [{ version: 2, dir }];
}

export function hasUsage(root: Sysroot, loc: CgroupLocation): boolean {
  return loc.version === 2
    ? root.exists(`${loc.dir}/cpu.stat`)
    : root.exists(`${loc.cpuacctDir}/cpuacct.usage`);
}

/** A readable name for messages and reports. */
export function describeCgroup(loc: CgroupLocation): string {
  return loc.version === 2 ? loc.dir : loc.cpuacctDir;
}

/**
 * Reads a cgroup: its CPU time, its cpuset and its processes. A cgroup that is gone, or a
 * counter that cannot be read, throws (with the file and the reason); unreadable member
 * processes only become warnings (they place time, the counter measures it).
 */
export function readCgroup(root: Sysroot, loc: CgroupLocation): CgroupReading {
  const warnings: string[] = [];
  const usageUs = readUsage(root, loc);
  const cpus = readCpuset(root, loc);
  const dir = loc.version === 2 ? loc.dir : loc.cpuacctDir;
  const pids = memberPids(root, dir);
  return { usageUs, cpus, processes: readProcesses(root, pids, warnings), warnings };
}

function readUsage(root: Sysroot, loc: CgroupLocation): number {
  const file = loc.version === 2 ? `${loc.dir}/cpu.stat` : `${loc.cpuacctDir}/cpuacct.usage`;
  const text = readIfPresent(root, file);
  if (text === undefined) throw new Error(`${file}: no such file (the cgroup is gone)`);
  return loc.version === 2 ? parseCpuStatUsage(text, file) : parseCpuacctUsage(text, file);
}

/**
 * The CPUs the cgroup may use. v2: cpuset.cpus.effective of the cgroup or, when the cpuset
 * controller is not enabled there, of its nearest ancestor that has it. v1: cpuset.effective_cpus
 * (or cpuset.cpus) of the same path in the cpuset hierarchy.
 */
function readCpuset(root: Sysroot, loc: CgroupLocation): number[] | undefined {
  if (loc.version === 1) {
    if (!loc.cpusetDir) return undefined;
    for (const name of ['cpuset.effective_cpus', 'cpuset.cpus']) {
      const text = readIfPresent(root, `${loc.cpusetDir}/${name}`);
      if (text !== undefined && text.trim() !== '') return parseCpuList(text);
    }
    return undefined;
  }
  for (let dir = loc.dir; dir.startsWith(`${CGROUP_ROOT}/`); dir = dir.slice(0, dir.lastIndexOf('/'))) {
    const text = readIfPresent(root, `${dir}/cpuset.cpus.effective`);
    if (text !== undefined && text.trim() !== '') return parseCpuList(text);
  }
  return undefined;
}

/** Pids in a cgroup and all its descendants (v2 keeps processes in leaves only). */
function memberPids(root: Sysroot, dir: string): number[] {
  const out: number[] = [];
  const queue = [dir];
  while (queue.length > 0) {
    const d = queue.shift()!;
    const file = `${d}/cgroup.procs`;
    const text = readIfPresent(root, file);
    if (text !== undefined) out.push(...parsePidList(text, file));
    for (const sub of subdirectories(root, d)) queue.push(`${d}/${sub}`);
  }
  return out;
}
