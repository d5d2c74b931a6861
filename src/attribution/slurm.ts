import { InvalidArgumentError } from '../platform/errors.js';
import type { Sysroot } from '../platform/sysroot.js';
import { CGROUP_ROOT, type CgroupLocation, CPUACCT_MOUNTS, describeCgroup, hasUsage } from './cgroup.js';
import { subdirectories } from './kernel-files.js';

/**
 * Finds a Slurm job's cgroup. Layouts (Slurm's cgroup documentation, cgroup_v2.html):
 * - cgroup/v2: /sys/fs/cgroup/system.slice/slurmstepd.scope/job_<id>/step_<s>/{slurm,user/task_<n>}
 *   ("<nodename>_slurmstepd.scope" when Slurm is built with --enable-multiple-slurmd);
 * - cgroup/v1: /sys/fs/cgroup/<controller>/slurm/uid_<uid>/job_<id>/step_<s>/task_<n>, with
 *   CPU time in the cpuacct controller ("slurm_<nodename>" with multiple slurmd per node).
 * The job's directory covers all its steps (batch, extern, interactive, srun steps).
 */

/** The job id to follow: an explicit one, else SLURM_JOB_ID of the environment. */
export function slurmJobId(
  explicit: string | number | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const given = explicit ?? env.SLURM_JOB_ID;
  if (given === undefined || String(given).trim() === '') {
    throw new InvalidArgumentError(
      'no Slurm job id: give one, or run inside a job (SLURM_JOB_ID is not set)',
    );
  }
  const id = String(given).trim();
  // Array tasks have their own numeric job id (SLURM_JOB_ID); "123_4" is only a display form.
  if (!/^\d+$/.test(id)) throw new InvalidArgumentError(`Slurm job id "${id}" is not a number`);
  return id;
}

const STEPD_SCOPE = /^(?:.+_)?slurmstepd\.scope$/;
const V1_SLURM_DIR = /^slurm(?:_.+)?$/;

/** Every place this node could keep the job's cgroup, v2 first. */
function candidates(root: Sysroot, jobId: string): CgroupLocation[] {
  const out: CgroupLocation[] = [];
  const slice = `${CGROUP_ROOT}/system.slice`;
  for (const scope of subdirectories(root, slice).filter((d) => STEPD_SCOPE.test(d))) {
    out.push({ version: 2, dir: `${slice}/${scope}/job_${jobId}` });
  }
  for (const mount of CPUACCT_MOUNTS) {
    const base = `${CGROUP_ROOT}/${mount}`;
    for (const slurmDir of subdirectories(root, base).filter((d) => V1_SLURM_DIR.test(d))) {
      for (const uidDir of subdirectories(root, `${base}/${slurmDir}`).filter((d) => /^uid_\d+$/.test(d))) {
        const tail = `${slurmDir}/${uidDir}/job_${jobId}`;
        out.push({ version: 1, cpuacctDir: `${base}/${tail}`, cpusetDir: `${CGROUP_ROOT}/cpuset/${tail}` });
      }
    }
  }
  return out;
}

/** The job's cgroup on this node; an error says where it looked. */
export function findSlurmJobCgroup(root: Sysroot, jobId: string): CgroupLocation {
  const found = candidates(root, jobId).filter((loc) => hasUsage(root, loc));
  if (found.length === 1) return found[0]!;
  if (found.length > 1) {
    throw new InvalidArgumentError(
      `Slurm job ${jobId}: several cgroups found (${found.map(describeCgroup).join(', ')})`,
    );
  }
  throw new Error(
    `Slurm job ${jobId}: no cgroup on this node (looked for ${CGROUP_ROOT}/system.slice/*slurmstepd.scope/job_${jobId} and ${CGROUP_ROOT}/cpuacct/slurm*/uid_*/job_${jobId})`,
  );
}
