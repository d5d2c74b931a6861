import type { Sysroot } from '../platform/sysroot.js';
import { CGROUP_ROOT, type CgroupLocation, CPUACCT_MOUNTS } from './cgroup.js';
import { readIfPresent } from './kernel-files.js';

/**
 * Which GPUs a cgroup is bound to: the NVIDIA device minors its cgroup/v1 devices controller
 * allows (Slurm's ConstrainDevices binds a job's GPUs so). A consumer bound to a GPU that no other
 * consumer may open owns it, and gets all of its dynamic energy.
 */

/** The NVIDIA character devices' major number (/dev/nvidia<minor>; 254 modeset, 255 nvidiactl). */
const NVIDIA_MAJOR = 195;
const FIRST_CONTROL_MINOR = 254;

/**
 * Minors of the NVIDIA GPUs a cgroup/v1 devices.list allows; undefined when it allows every
 * device (`a *:*`, `c 195:*`: not bound to GPUs) or cannot tell.
 */
export function parseDevicesList(text: string): number[] | undefined {
  const minors: number[] = [];
  for (const line of text.split('\n')) {
    const [type, numbers] = line.trim().split(/\s+/);
    if (type === undefined || numbers === undefined) continue;
    if (type === 'a') return undefined;
    const [major, minor] = numbers.split(':');
    if (type !== 'c' || (major !== '*' && Number(major) !== NVIDIA_MAJOR)) continue;
    if (minor === '*' || major === '*') return undefined;
    const m = Number(minor);
    if (Number.isInteger(m) && m < FIRST_CONTROL_MINOR) minors.push(m);
  }
  return minors.sort((a, b) => a - b);
}

/**
 * GPUs bound to a cgroup (minors), from the v1 devices controller at the same path. cgroup v2
 * enforces device rules with eBPF programs that cannot be read back: undefined there.
 */
export function cgroupGpus(root: Sysroot, loc: CgroupLocation): number[] | undefined {
  if (loc.version !== 1) return undefined;
  const mount = CPUACCT_MOUNTS.find((m) => loc.cpuacctDir.startsWith(`${CGROUP_ROOT}/${m}`));
  if (mount === undefined) return undefined;
  const relative = loc.cpuacctDir.slice(`${CGROUP_ROOT}/${mount}`.length);
  try {
    const text = readIfPresent(root, `${CGROUP_ROOT}/devices${relative}/devices.list`);
    return text === undefined ? undefined : parseDevicesList(text);
  } catch {
    return undefined;
  }
}
