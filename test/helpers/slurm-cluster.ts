import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { freePort } from './exporter.js';
import { until } from './poll.js';
import { tempDir } from './tmp.js';
import type { TestUser } from './users.js';

/*
 * A private single-node Slurm cluster for tests: Debian's munged, slurmctld and slurmd started in
 * the foreground on their own configuration, key, spool, state, logs and ports, all in a temp
 * directory. The machine's own Slurm and munge (their /etc files, sockets and ports) are never
 * used. Slurm's commands find this cluster through SLURM_CONF (`env`).
 *
 * Job containment follows the machine: cgroup v1 with a cpuacct hierarchy → cgroup/v1; a cgroup v2
 * root → cgroup/v2 without systemd (IgnoreSystemd: no system bus is involved). Either way the job
 * gets a cgroup the exporter's attribution finds. The cgroup directories Slurm adds under
 * /sys/fs/cgroup are removed at stop (only those that were not there before).
 */

export const SLURM_TOOLS = ['munged', 'slurmctld', 'slurmd', 'srun', 'sinfo', 'scontrol'] as const;

export type CgroupMode = 'cgroup/v1' | 'cgroup/v2';

/** The cgroup plugin this machine allows, or why none. */
export function cgroupMode(): CgroupMode | string {
  if (existsSync('/sys/fs/cgroup/cpuacct/cpuacct.usage')) return 'cgroup/v1';
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) return 'cgroup/v2';
  return 'no cgroup hierarchy with CPU accounting at /sys/fs/cgroup (v1 cpuacct or v2)';
}

export interface SlurmOptions {
  /** SlurmUser: slurmctld drops to it (its state directory and log are its own). */
  slurmUser: TestUser;
  /** Epilog= (run by slurmd as root on the node). */
  epilog?: string;
  /** EpilogSlurmctld= (run by slurmctld as SlurmUser). */
  epilogSlurmctld?: string;
}

export interface SlurmCluster {
  /** The node's name (the host name, as slurmd requires). */
  node: string;
  mode: CgroupMode;
  /** SLURM_CONF for Slurm's commands. */
  env: { SLURM_CONF: string };
  dir: string;
  /** slurmctld's and slurmd's logs, for failure messages. */
  logs(): string;
  /** The node's state as sinfo prints it ("idle", "completing", "drained" …). */
  nodeState(): string;
  stop(): Promise<void>;
}

/** Top-level cgroup directories (one level under each hierarchy) that exist now. */
function cgroupTops(): Set<string> {
  const out = new Set<string>();
  const root = '/sys/fs/cgroup';
  for (const h of readdirSync(root)) {
    const dir = join(root, h);
    try {
      for (const d of readdirSync(dir, { withFileTypes: true }))
        if (d.isDirectory() && d.name.startsWith('slurm')) out.add(join(dir, d.name));
    } catch {
      // not a directory (a v2 root's files) or unreadable
    }
  }
  for (const d of readdirSync(root, { withFileTypes: true }))
    if (d.isDirectory() && d.name.startsWith('slurm')) out.add(join(root, d.name));
  return out;
}

/** Removes an emptied cgroup tree (cgroup directories go with rmdir, deepest first). */
function removeCgroupTree(dir: string): void {
  for (const d of readdirSync(dir, { withFileTypes: true }))
    if (d.isDirectory()) removeCgroupTree(join(dir, d.name));
  rmdirSync(dir);
}

function daemon(command: string, args: string[], log: string[]): ChildProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d) => log.push(String(d)));
  child.stderr!.on('data', (d) => log.push(String(d)));
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(killer);
}

/** Starts munged, slurmctld and slurmd, and waits until the node is idle. */
export async function startSlurm(options: SlurmOptions): Promise<SlurmCluster> {
  const mode = cgroupMode();
  if (mode !== 'cgroup/v1' && mode !== 'cgroup/v2') throw new Error(mode);
  const node = hostname().split('.')[0]!;
  const dir = tempDir('jg-slurm-');
  chmodSync(dir, 0o755); // job users and SlurmUser reach the munge socket and the scripts
  const keyDir = join(dir, 'munge-key');
  const sockDir = join(dir, 'munge');
  const state = join(dir, 'state');
  for (const d of [keyDir, sockDir, state, join(dir, 'spool'), join(dir, 'log'), join(dir, 'run')])
    mkdirSync(d);
  chmodSync(keyDir, 0o700);
  chmodSync(sockDir, 0o755);
  chmodSync(join(dir, 'run'), 0o777);
  chmodSync(join(dir, 'log'), 0o777);
  chownSync(state, options.slurmUser.uid, options.slurmUser.gid);
  const key = join(keyDir, 'munge.key');
  writeFileSync(key, execFileSync('head', ['-c', '1024', '/dev/urandom']), { mode: 0o400 });
  const socket = join(sockDir, 'munge.socket');
  const [ctldPort, slurmdPort] = [await freePort(), await freePort()];
  const conf = join(dir, 'slurm.conf');
  const lines = [
    'ClusterName=jgtest',
    `SlurmctldHost=${node}(127.0.0.1)`,
    `SlurmUser=${options.slurmUser.name}`,
    `SlurmctldPort=${ctldPort}`,
    `SlurmdPort=${slurmdPort}`,
    'AuthType=auth/munge',
    `AuthInfo=socket=${socket}`,
    'CredType=cred/munge',
    `StateSaveLocation=${state}`,
    `SlurmdSpoolDir=${join(dir, 'spool')}`,
    `SlurmctldPidFile=${join(dir, 'run/slurmctld.pid')}`,
    `SlurmdPidFile=${join(dir, 'run/slurmd.pid')}`,
    `SlurmctldLogFile=${join(dir, 'log/slurmctld.log')}`,
    `SlurmdLogFile=${join(dir, 'log/slurmd.log')}`,
    `PlugStackConfig=${join(dir, 'plugstack.conf')}`,
    'ProctrackType=proctrack/cgroup',
    'TaskPlugin=task/cgroup',
    'JobAcctGatherType=jobacct_gather/cgroup',
    'AccountingStorageType=accounting_storage/none',
    'SchedulerType=sched/builtin',
    'SelectType=select/cons_tres',
    'SelectTypeParameters=CR_Core',
    'ReturnToService=2',
    'MpiDefault=none',
    'KillWait=5',
    ...(options.epilog ? [`Epilog=${options.epilog}`] : []),
    ...(options.epilogSlurmctld ? [`EpilogSlurmctld=${options.epilogSlurmctld}`] : []),
    // The node as slurmd -C sees it, so slurmd registers without a mismatch.
    `${execFileSync('slurmd', ['-C'], { encoding: 'utf8' })
      .split('\n')[0]!
      .replace(/RealMemory=\d+/, 'RealMemory=1000')} NodeAddr=127.0.0.1 State=UNKNOWN`,
    `PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP`,
    '',
  ];
  writeFileSync(conf, lines.join('\n'));
  writeFileSync(join(dir, 'plugstack.conf'), '');
  writeFileSync(
    join(dir, 'cgroup.conf'),
    mode === 'cgroup/v1'
      ? 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n'
      : 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\nEnableControllers=yes\n',
  );
  const cgroupsBefore = cgroupTops();
  const log: string[] = [];
  const children: ChildProcess[] = [];
  const env = { SLURM_CONF: conf };
  const cluster: SlurmCluster = {
    node,
    mode,
    env,
    dir,
    logs: () =>
      [
        log.join(''),
        ...['slurmctld.log', 'slurmd.log'].map((f) => {
          const file = join(dir, 'log', f);
          return existsSync(file) ? `--- ${f}\n${readFileSync(file, 'utf8').slice(-4000)}` : '';
        }),
      ].join('\n'),
    nodeState: () =>
      execFileSync('sinfo', ['-h', '-N', '-o', '%T', '-n', node], {
        encoding: 'utf8',
        env: { ...process.env, ...env },
      }).trim(),
    stop: async () => {
      for (const child of children.reverse()) await stopChild(child);
      // Slurm leaves its (emptied) top-level cgroups behind; the ones this cluster added go.
      for (const top of cgroupTops()) {
        if (cgroupsBefore.has(top)) continue;
        try {
          removeCgroupTree(top);
        } catch {
          // a cgroup with a process still in it stays; the next check names it
        }
      }
    },
  };
  try {
    children.push(
      daemon(
        'munged',
        [
          '--foreground',
          '--force',
          `--key-file=${key}`,
          `--socket=${socket}`,
          `--pid-file=${join(dir, 'run/munged.pid')}`,
          `--log-file=${join(dir, 'log/munged.log')}`,
          `--seed-file=${join(keyDir, 'seed')}`,
        ],
        log,
      ),
    );
    await until('munged socket', () => existsSync(socket), 30_000);
    children.push(daemon('slurmctld', ['-D', '-f', conf], log));
    children.push(daemon('slurmd', ['-D', '-f', conf], log));
    await until(
      'the Slurm node idle',
      () => {
        for (const c of children)
          if (c.exitCode !== null) throw new Error(`a Slurm daemon exited: ${cluster.logs()}`);
        try {
          return cluster.nodeState() === 'idle';
        } catch {
          return false; // slurmctld not answering yet
        }
      },
      60_000,
      200,
    );
  } catch (err) {
    await cluster.stop();
    throw new Error(`${(err as Error).message}\n${cluster.logs()}`);
  }
  return cluster;
}
