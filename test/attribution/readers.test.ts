import assert from 'node:assert/strict';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readCgroup, resolveCgroupPath } from '../../src/attribution/cgroup.js';
import { openConsumer } from '../../src/attribution/consumers.js';
import { findContainerCgroup } from '../../src/attribution/container.js';
import { readProcessTree } from '../../src/attribution/process-tree.js';
import { findSlurmJobCgroup, slurmJobId } from '../../src/attribution/slurm.js';
import { InvalidArgumentError } from '../../src/platform/errors.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { copyFixture, FIXTURES } from '../helpers/tmp.js';
import { writeProcess } from './helpers.js';

const NODE = new Sysroot(`${FIXTURES}attribution/node`);
const NODE_V1 = new Sysroot(`${FIXTURES}attribution/node-v1`);
const SCOPE = '/sys/fs/cgroup/system.slice/slurmstepd.scope';
const A = 'a1b2c3d4e5f607182930a1b2c3d4e5f607182930a1b2c3d4e5f607182930a1b2';
const B = 'b0b1b2b3b4b5b6b7b8b9babbbcbdbebfb0b1b2b3b4b5b6b7b8b9babbbcbdbebf';
const C = 'c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00';
const E = 'e1e2e3e4e5e6e7e8e9eaebecedeeeff0e1e2e3e4e5e6e7e8e9eaebecedeeeff0';

const pids = (list: { pid: number }[]) => list.map((p) => p.pid).sort((a, b) => a - b);

function removeChildrenFiles(dir: string): void {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) removeChildrenFiles(path);
    else if (entry === 'children') rmSync(path);
  }
}

describe('process tree reader', () => {
  it('follows /proc/<pid>/task/<tid>/children of every thread (504 was forked by thread 505)', () => {
    const tree = readProcessTree(NODE, 500);
    assert.deepEqual(pids(tree.processes), [500, 501, 502, 503, 504]);
    assert.deepEqual(tree.warnings, []);
    assert.equal(tree.processes.find((p) => p.pid === 503)!.ownTicks, 320);
  });

  it('without children files (CONFIG_PROC_CHILDREN off) it scans parent pids and finds the same tree', () => {
    const root = copyFixture('attribution/node');
    removeChildrenFiles(join(root, 'proc'));
    assert.deepEqual(pids(readProcessTree(new Sysroot(root), 500).processes), [500, 501, 502, 503, 504]);
    assert.deepEqual(pids(readProcessTree(new Sysroot(root), 501).processes), [501, 503]);
  });

  it('an orphan re-parented to init stays a member while it lives; a reused root pid is not the root', () => {
    const root = copyFixture('attribution/node');
    const sys = new Sysroot(root);
    const first = readProcessTree(sys, 500);
    // 501 exits; its child 503 is re-parented to init.
    writeProcess(root, 501, null);
    writeProcess(root, 503, [1, 7200, 310, 20, 0, 0, 3]);
    assert.deepEqual(pids(readProcessTree(sys, 500, first.processes).processes), [500, 502, 503, 504]);
    assert.deepEqual(pids(readProcessTree(sys, 500).processes), [500, 502, 504]);
    // The root's pid now belongs to another process: neither it nor its children are the tree.
    assert.deepEqual(readProcessTree(sys, 500, [], 6999).processes, []);
  });
});

describe('cgroup reader', () => {
  it('resolves a path as /proc/<pid>/cgroup writes it, or in full; refuses ".." and unknown cgroups', () => {
    const loc = { version: 2, dir: `${SCOPE}/job_101` };
    assert.deepEqual(resolveCgroupPath(NODE, '/system.slice/slurmstepd.scope/job_101'), loc);
    assert.deepEqual(resolveCgroupPath(NODE, `${SCOPE}/job_101/`), loc);
    assert.throws(() => resolveCgroupPath(NODE, '/system.slice/../etc'), InvalidArgumentError);
    assert.throws(() => resolveCgroupPath(NODE, 'system.slice'), /must be absolute/);
    assert.throws(() => resolveCgroupPath(NODE, '/nope.slice'), /cgroup \/nope.slice: not found/);
    assert.deepEqual(resolveCgroupPath(NODE_V1, '/slurm/uid_1000/job_303'), {
      version: 1,
      cpuacctDir: '/sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/job_303',
      cpusetDir: '/sys/fs/cgroup/cpuset/slurm/uid_1000/job_303',
    });
  });

  it('reads usage_usec, the cpuset, and the processes of the cgroup and all its descendants', () => {
    const r = readCgroup(NODE, { version: 2, dir: `${SCOPE}/job_202` });
    assert.equal(r.usageUs, 3_000_000);
    assert.deepEqual(r.cpus, [1, 2, 3]);
    assert.deepEqual(pids(r.processes), [2020, 2021, 2022]);
    assert.deepEqual(r.warnings, []);
  });

  it("a cgroup without its own cpuset file takes its nearest ancestor's; none at all is unrestricted", () => {
    assert.deepEqual(readCgroup(NODE, { version: 2, dir: `${SCOPE}/job_101/step_0` }).cpus, [0, 1]);
    assert.equal(readCgroup(NODE, { version: 2, dir: `${SCOPE}/system` }).cpus, undefined);
  });

  it('cgroup v1: cpuacct.usage (ns) and the cpuset hierarchy at the same path', () => {
    const r = readCgroup(NODE_V1, resolveCgroupPath(NODE_V1, '/slurm/uid_1000/job_303'));
    assert.equal(r.usageUs, 2_500_000);
    assert.deepEqual(r.cpus, [2, 3]);
    assert.deepEqual(pids(r.processes), [3031]);
  });
});

describe('Slurm jobs', () => {
  it('cgroup/v2 layout: system.slice/slurmstepd.scope/job_<id>, and <node>_slurmstepd.scope', () => {
    assert.deepEqual(findSlurmJobCgroup(NODE, '202'), { version: 2, dir: `${SCOPE}/job_202` });
    assert.deepEqual(findSlurmJobCgroup(NODE, '404'), {
      version: 2,
      dir: '/sys/fs/cgroup/system.slice/node7_slurmstepd.scope/job_404',
    });
  });

  it('cgroup/v1 layout: <cpuacct mount>/slurm/uid_<uid>/job_<id>', () => {
    assert.deepEqual(findSlurmJobCgroup(NODE_V1, '303'), {
      version: 1,
      cpuacctDir: '/sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/job_303',
      cpusetDir: '/sys/fs/cgroup/cpuset/slurm/uid_1000/job_303',
    });
  });

  it('a job not on this node says where it looked', () => {
    assert.throws(
      () => findSlurmJobCgroup(NODE, '999'),
      /Slurm job 999: no cgroup on this node \(looked for \/sys\/fs\/cgroup\/system.slice\/\*slurmstepd.scope\/job_999/,
    );
  });

  it('job id: explicit first, else SLURM_JOB_ID; anything but digits is refused', () => {
    assert.equal(slurmJobId(undefined, { SLURM_JOB_ID: '202' }), '202');
    assert.equal(slurmJobId(101, { SLURM_JOB_ID: '202' }), '101');
    assert.throws(() => slurmJobId(undefined, {}), /SLURM_JOB_ID is not set/);
    assert.throws(() => slurmJobId('12_3', {}), /Slurm job id "12_3" is not a number/);
    assert.throws(() => slurmJobId('../1', {}), InvalidArgumentError);
  });
});

describe('containers', () => {
  it('finds Docker, containerd (Kubernetes pod) and Podman scopes by full id or unique prefix', () => {
    assert.deepEqual(findContainerCgroup(NODE, A), {
      version: 2,
      dir: `/sys/fs/cgroup/system.slice/docker-${A}.scope`,
    });
    assert.deepEqual(findContainerCgroup(NODE, A.slice(0, 14).toUpperCase()), {
      version: 2,
      dir: `/sys/fs/cgroup/system.slice/docker-${A}.scope`,
    });
    assert.deepEqual(findContainerCgroup(NODE, B.slice(0, 12)), {
      version: 2,
      dir: `/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0c1d2e3f_4a5b.slice/cri-containerd-${B}.scope`,
    });
    // Podman's conmon scope carries the same id but is not the container.
    assert.deepEqual(findContainerCgroup(NODE, C), {
      version: 2,
      dir: `/sys/fs/cgroup/machine.slice/libpod-${C}.scope`,
    });
  });

  it('an ambiguous prefix lists the candidates (Docker systemd and cgroupfs drivers); bad or unknown ids are refused', () => {
    assert.throws(
      () => findContainerCgroup(NODE, 'a1b2c3d4e5f6'),
      (e: unknown) => {
        assert.ok(e instanceof InvalidArgumentError);
        assert.match((e as Error).message, /matches several containers \(/);
        assert.match((e as Error).message, /\/sys\/fs\/cgroup\/docker\/a1b2c3d4e5f6ffff/);
        assert.match((e as Error).message, /\/sys\/fs\/cgroup\/system.slice\/docker-a1b2c3d4e5f607/);
        return true;
      },
    );
    assert.throws(() => findContainerCgroup(NODE, 'abc'), /12 to 64 hexadecimal digits/);
    assert.throws(() => findContainerCgroup(NODE, 'f'.repeat(64)), /no cgroup named after it/);
  });

  it('cgroup v1: the cpuacct hierarchy (cgroupfs driver)', () => {
    assert.deepEqual(findContainerCgroup(NODE_V1, E.slice(0, 12)), {
      version: 1,
      cpuacctDir: `/sys/fs/cgroup/cpu,cpuacct/docker/${E}`,
      cpusetDir: `/sys/fs/cgroup/cpuset/docker/${E}`,
    });
  });
});

describe('consumers', () => {
  it('every kind resolves to a named consumer that reads', () => {
    const env = { SLURM_JOB_ID: '202' };
    const consumers = [
      openConsumer({ kind: 'pid-tree', pid: 500 }, NODE),
      openConsumer({ kind: 'cgroup', path: '/system.slice/slurmstepd.scope/job_101' }, NODE),
      openConsumer({ kind: 'slurm-job' }, NODE, env),
      openConsumer({ kind: 'container', id: C.toUpperCase() }, NODE),
    ];
    assert.deepEqual(
      consumers.map((c) => c.id),
      ['pid:500', 'cgroup:/system.slice/slurmstepd.scope/job_101', 'slurm:202', `container:${C}`],
    );
    for (const c of consumers) assert.equal(c.read().ok, true, c.id);
    const job = consumers[2]!.read();
    assert.ok(job.ok && job.cgroup?.usageUs === 3_000_000);
  });

  it('resolution errors are thrown at once; a cgroup removed later is a reading that says why', () => {
    assert.throws(() => openConsumer({ kind: 'pid-tree', pid: 4242 }, NODE), /process 4242 does not exist/);
    assert.throws(() => openConsumer({ kind: 'pid-tree', pid: 0 }, NODE), /pid 0 is not a process id/);
    const root = copyFixture('attribution/node');
    const job = openConsumer({ kind: 'slurm-job', jobId: '202' }, new Sysroot(root));
    rmSync(join(root, 'sys/fs/cgroup/system.slice/slurmstepd.scope/job_202'), { recursive: true });
    assert.deepEqual(job.read(), {
      ok: false,
      reason: `slurm:202 (${SCOPE}/job_202): ${SCOPE}/job_202/cpu.stat: no such file (the cgroup is gone)`,
    });
  });
});
