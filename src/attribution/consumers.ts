import { errorMessage, InvalidArgumentError } from '../platform/errors.js';
import type { Sysroot } from '../platform/sysroot.js';
import { type CgroupLocation, describeCgroup, readCgroup, resolveCgroupPath } from './cgroup.js';
import { findContainerCgroup, validContainerId } from './container.js';
import { cgroupGpus } from './gpu-binding.js';
import { readProcessStat } from './kernel-files.js';
import type { ProcessStat } from './proc-stat.js';
import { readProcessTree } from './process-tree.js';
import { findSlurmJobCgroup, slurmJobId } from './slurm.js';

/** What to attribute energy to. */
export type ConsumerSpec =
  | { kind: 'pid-tree'; pid: number }
  | { kind: 'cgroup'; path: string }
  /** Without `jobId`, the job of the environment (SLURM_JOB_ID). */
  | { kind: 'slurm-job'; jobId?: string | number }
  | { kind: 'container'; id: string };

/** One reading of a consumer's CPU use (cumulative counters; intervals come from two readings). */
export type CpuReading =
  | {
      ok: true;
      /** The processes (a tree's members, or a cgroup's): their times, and where they ran. */
      processes: ProcessStat[];
      /** For cgroup consumers: the kernel's exact CPU time counter and the cpuset. */
      cgroup?: { usageUs: number; cpus?: number[] };
      warnings: string[];
    }
  | { ok: false; reason: string };

export interface Consumer {
  /** Stable name in reports: "pid:1234", "cgroup:/sys/fs/cgroup/…", "slurm:42", "container:0123abcd…". */
  readonly id: string;
  /** Never throws: a failure is `{ ok: false, reason }` naming the file and the cause. */
  read(): CpuReading;
  /** NVIDIA device minors bound to it (cgroup/v1 devices controller); undefined: not bound or unknown. */
  boundGpus?(): number[] | undefined;
}

/**
 * Resolves a consumer on this node (under the sysroot). Resolution errors — no such process,
 * job or container, a malformed id — throw one clear error; later read failures do not.
 */
export function openConsumer(
  spec: ConsumerSpec,
  root: Sysroot,
  env: NodeJS.ProcessEnv = process.env,
): Consumer {
  switch (spec.kind) {
    case 'pid-tree':
      return new ProcessTreeConsumer(root, spec.pid);
    case 'cgroup':
      return new CgroupConsumer(root, resolveCgroupPath(root, spec.path), `cgroup:${spec.path}`);
    case 'slurm-job': {
      const id = slurmJobId(spec.jobId, env);
      return new CgroupConsumer(root, findSlurmJobCgroup(root, id), `slurm:${id}`);
    }
    case 'container': {
      const id = validContainerId(spec.id);
      return new CgroupConsumer(root, findContainerCgroup(root, id), `container:${id}`);
    }
  }
}

/** The same consumer under another name in reports ("app", "slurm:42" for a found job). */
export function renamed(consumer: Consumer, id: string): Consumer {
  return {
    id,
    read: () => consumer.read(),
    ...(consumer.boundGpus ? { boundGpus: () => consumer.boundGpus?.() } : {}),
  };
}

class ProcessTreeConsumer implements Consumer {
  readonly id: string;
  private readonly rootStartTicks: number;
  private known: ProcessStat[] = [];

  constructor(
    private readonly root: Sysroot,
    private readonly pid: number,
  ) {
    if (!Number.isInteger(pid) || pid <= 0) throw new InvalidArgumentError(`pid ${pid} is not a process id`);
    const stat = readProcessStat(root, pid);
    if (stat === undefined) throw new InvalidArgumentError(`process ${pid} does not exist`);
    this.rootStartTicks = stat.startTicks;
    this.id = `pid:${pid}`;
  }

  read(): CpuReading {
    try {
      const tree = readProcessTree(this.root, this.pid, this.known, this.rootStartTicks);
      this.known = tree.processes;
      return { ok: true, processes: tree.processes, warnings: tree.warnings };
    } catch (err) {
      return { ok: false, reason: `${this.id}: ${errorMessage(err)}` };
    }
  }
}

class CgroupConsumer implements Consumer {
  constructor(
    private readonly root: Sysroot,
    private readonly location: CgroupLocation,
    readonly id: string,
  ) {}

  read(): CpuReading {
    try {
      const r = readCgroup(this.root, this.location);
      return {
        ok: true,
        processes: r.processes,
        cgroup: { usageUs: r.usageUs, cpus: r.cpus },
        warnings: r.warnings,
      };
    } catch (err) {
      return { ok: false, reason: `${this.id} (${describeCgroup(this.location)}): ${errorMessage(err)}` };
    }
  }

  boundGpus(): number[] | undefined {
    return cgroupGpus(this.root, this.location);
  }
}
