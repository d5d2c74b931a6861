import { errorMessage } from '../platform/errors.js';
import type { Sysroot } from '../platform/sysroot.js';
import { CGROUP_ROOT, CPUACCT_MOUNTS } from './cgroup.js';
import { type Consumer, type ConsumerSpec, openConsumer, renamed } from './consumers.js';
import { subdirectories } from './kernel-files.js';

/**
 * The consumers of a node as an admin sees them (`joulegate top`): Slurm jobs, users' sessions
 * (systemd's user-<uid>.slice) and system services and scopes (containers run as scopes), found
 * in the cgroup hierarchies under the sysroot (v2 at the root or at `unified`, v1 cpuacct). They
 * do not overlap: a Slurm job's cgroup sits under slurmstepd's scope, which is not listed.
 */

export interface FoundConsumer {
  /** Name in the table: "slurm:42", "user:1000", "system:sshd.service". */
  id: string;
  spec: ConsumerSpec;
}

const HIERARCHIES = [
  CGROUP_ROOT,
  `${CGROUP_ROOT}/unified`,
  ...CPUACCT_MOUNTS.map((m) => `${CGROUP_ROOT}/${m}`),
];
const STEPD_SCOPE = /^(?:.+_)?slurmstepd\.scope$/;

/** Names of the sub-directories of `relative` in any hierarchy, once each. */
function childrenEverywhere(root: Sysroot, relative: string): string[] {
  const names = new Set<string>();
  for (const h of HIERARCHIES) for (const d of subdirectories(root, `${h}${relative}`)) names.add(d);
  return [...names].sort();
}

function slurmJobs(root: Sysroot): string[] {
  const jobs = new Set<string>();
  for (const scope of childrenEverywhere(root, '/system.slice').filter((d) => STEPD_SCOPE.test(d)))
    for (const d of childrenEverywhere(root, `/system.slice/${scope}`))
      if (/^job_\d+$/.test(d)) jobs.add(d.slice(4));
  for (const slurm of childrenEverywhere(root, '').filter((d) => /^slurm(?:_.+)?$/.test(d)))
    for (const uid of childrenEverywhere(root, `/${slurm}`).filter((d) => /^uid_\d+$/.test(d)))
      for (const d of childrenEverywhere(root, `/${slurm}/${uid}`))
        if (/^job_\d+$/.test(d)) jobs.add(d.slice(4));
  return [...jobs].sort((a, b) => Number(a) - Number(b));
}

/**
 * Why no consumer can be found on this node at all: none of the cgroup hierarchies discovery
 * reads is mounted (a v2 root holds cgroup.controllers, a v1 cpuacct mount cpuacct.usage).
 * Undefined when one is.
 */
export function noConsumerHierarchy(root: Sysroot): string | undefined {
  const mounted = HIERARCHIES.some(
    (h) => root.exists(`${h}/cgroup.controllers`) || root.exists(`${h}/cpuacct.usage`),
  );
  if (mounted) return undefined;
  return `no cgroup hierarchy at ${CGROUP_ROOT} (v2, or v1 with cpuacct): consumers are found as cgroups`;
}

/** Every consumer found, Slurm jobs first, then users, then system units. */
export function discoverConsumers(root: Sysroot): FoundConsumer[] {
  const out: FoundConsumer[] = slurmJobs(root).map((id) => ({
    id: `slurm:${id}`,
    spec: { kind: 'slurm-job', jobId: id },
  }));
  for (const d of childrenEverywhere(root, '/user.slice')) {
    const m = /^user-(\d+)\.slice$/.exec(d);
    if (m) out.push({ id: `user:${m[1]}`, spec: { kind: 'cgroup', path: `/user.slice/${d}` } });
  }
  for (const d of childrenEverywhere(root, '/system.slice')) {
    if (STEPD_SCOPE.test(d) || !/\.(service|scope)$/.test(d)) continue;
    out.push({ id: `system:${d}`, spec: { kind: 'cgroup', path: `/system.slice/${d}` } });
  }
  return out;
}

/** Opens what was found under its table name; one that vanished meanwhile is left out. */
export function openFound(
  root: Sysroot,
  found: FoundConsumer,
  onError?: (reason: string) => void,
): Consumer | undefined {
  try {
    return renamed(openConsumer(found.spec, root), found.id);
  } catch (err) {
    onError?.(`${found.id}: ${errorMessage(err)}`);
    return undefined;
  }
}
