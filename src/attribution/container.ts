import { InvalidArgumentError } from '../platform/errors.js';
import type { Sysroot } from '../platform/sysroot.js';
import { CGROUP_ROOT, type CgroupLocation, CPUACCT_MOUNTS, describeCgroup, hasUsage } from './cgroup.js';
import { subdirectories } from './kernel-files.js';

/**
 * Finds a container's cgroup from its id (full 64 hex digits, or a unique prefix of at least
 * 12 as `docker ps` prints). Runtimes name the cgroup after the id:
 * - systemd cgroup driver: a scope, `docker-<id>.scope` (Docker), `cri-containerd-<id>.scope`
 *   (containerd's CRI, Kubernetes pods under kubepods.slice), `crio-<id>.scope` (CRI-O),
 *   `libpod-<id>.scope` (Podman, under machine.slice, or user.slice when rootless);
 * - cgroupfs driver: a directory named by the id alone (/docker/<id>, /kubepods/…/pod<uid>/<id>).
 * Podman's monitor (`libpod-conmon-<id>.scope`) is not the container and is not matched.
 */

const SCOPE = /^(?:docker|cri-containerd|crio|libpod|containerd)-([0-9a-f]{64})\.scope$/;
const BARE = /^([0-9a-f]{64})$/;
/** Cgroup trees are shallow (a pod's container sits at depth 4); the walk stops well below. */
const MAX_DEPTH = 8;

export function validContainerId(id: string): string {
  const trimmed = id.trim().toLowerCase();
  if (!/^[0-9a-f]{12,64}$/.test(trimmed)) {
    throw new InvalidArgumentError(`container id "${id}" must be 12 to 64 hexadecimal digits`);
  }
  return trimmed;
}

/**
 * Trees to walk: the unified one at the root on cgroup v2 systems; otherwise (v1, hybrid) the
 * unified tree at unified/ and the v1 cpuacct hierarchy.
 */
function trees(root: Sysroot): { base: string; version: 1 | 2 }[] {
  if (root.exists(`${CGROUP_ROOT}/cgroup.controllers`)) return [{ base: CGROUP_ROOT, version: 2 }];
  return [
    { base: `${CGROUP_ROOT}/unified`, version: 2 },
    ...CPUACCT_MOUNTS.map((m) => ({ base: `${CGROUP_ROOT}/${m}`, version: 1 as const })),
  ];
}

export function findContainerCgroup(root: Sysroot, containerId: string): CgroupLocation {
  const id = validContainerId(containerId);
  const found = new Map<string, CgroupLocation>();
  for (const { base, version } of trees(root)) {
    const queue: { dir: string; depth: number }[] = [{ dir: base, depth: 0 }];
    while (queue.length > 0) {
      const { dir, depth } = queue.shift()!;
      for (const name of subdirectories(root, dir)) {
        const path = `${dir}/${name}`;
        const full = (SCOPE.exec(name) ?? BARE.exec(name))?.[1];
        if (full !== undefined) {
          // A container's sub-cgroups are its own: neither this one's nor another's are walked.
          if (full.startsWith(id)) {
            const loc: CgroupLocation =
              version === 2
                ? { version: 2, dir: path }
                : {
                    version: 1,
                    cpuacctDir: path,
                    cpusetDir: `${CGROUP_ROOT}/cpuset${path.slice(base.length)}`,
                  };
            // The same container in the unified and the v1 tree: the unified one (walked first) wins.
            if (hasUsage(root, loc) && !found.has(full)) found.set(full, loc);
          }
          continue;
        }
        if (depth + 1 < MAX_DEPTH) queue.push({ dir: path, depth: depth + 1 });
      }
    }
  }
  if (found.size === 1) return [...found.values()][0]!;
  if (found.size > 1) {
    throw new InvalidArgumentError(
      `container id "${containerId}" matches several containers (${[...found.values()].map(describeCgroup).join(', ')})`,
    );
  }
  throw new Error(`container ${containerId}: no cgroup named after it under ${CGROUP_ROOT}`);
}
