import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JobEnergyReport } from '../../src/cluster/job-report/job-energy.js';
import { parseScontrolJob } from '../../src/cluster/job-report/slurm-job.js';
import { run, runCli } from '../helpers/cli.js';
import { freePort, type RunningExporter, scrape, seriesValue, startExporter } from '../helpers/exporter.js';
import { until } from '../helpers/poll.js';
import {
  type RunningPrometheus,
  ScriptedNode,
  startPrometheus,
  untilScraped,
} from '../helpers/prometheus.js';
import { needsTestUsers, needsTool, requirements, whenMet } from '../helpers/requirements.js';
import { cgroupMode, SLURM_TOOLS, type SlurmCluster, startSlurm } from '../helpers/slurm-cluster.js';
import { FIXTURES, tempDir } from '../helpers/tmp.js';
import { ensureUser, type TestUser } from '../helpers/users.js';

/*
 * Slurm for real: Debian's slurmctld, slurmd and munged on a private configuration (helpers/
 * slurm-cluster.ts), a joulegate exporter on the node and a real Prometheus scraping it. The
 * node's RAPL counters are a fixture advancing at scripted power; its processes, CPUs and cgroups
 * are the machine's own (the fixture sysroot links them), so the exporter attributes energy to
 * the real job's cgroup. The packaged epilog runs as Slurm runs it: Epilog (root, on the node)
 * and EpilogSlurmctld (SlurmUser, on the controller).
 */

const mode = cgroupMode();
const skip = requirements(
  needsTestUsers(),
  needsTool(...SLURM_TOOLS, 'prometheus', 'setsid'),
  mode === 'cgroup/v1' || mode === 'cgroup/v2' ? false : `needs cgroups for Slurm jobs: ${mode}`,
);

const SCRAPE_S = 1;
const PACKAGE_W = 40;
const DRAM_W = 6;
const PACKAGING = new URL('../../packaging/', import.meta.url).pathname;
const JOULEGATE = new URL('../../bin/joulegate', import.meta.url).pathname;
const PATH = `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`;

const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** The node as the exporter and monitors see it: fixture RAPL zones, the machine's own rest. */
function nodeSysroot(): string {
  const root = tempDir('jg-slurm-node-');
  for (const zone of ['intel-rapl:0', 'intel-rapl:0:0'])
    cpSync(
      join(FIXTURES, 'attribution/node/sys/class/powercap', zone),
      join(root, 'sys/class/powercap', zone),
      {
        recursive: true,
      },
    );
  mkdirSync(join(root, 'sys/fs'), { recursive: true });
  mkdirSync(join(root, 'sys/devices/system'), { recursive: true });
  symlinkSync('/proc', join(root, 'proc'));
  symlinkSync('/sys/fs/cgroup', join(root, 'sys/fs/cgroup'));
  symlinkSync('/sys/devices/system/cpu', join(root, 'sys/devices/system/cpu'));
  // The job's monitor runs as the job's user: the tree must be readable to it.
  execFileSync('chmod', ['-R', 'a+rX', root]);
  return root;
}

/** `Total: 1.234 kJ` and the like in the epilog's text → joules. */
function joulesIn(text: string, label: RegExp): number {
  const m = new RegExp(`${label.source}\\s*([\\d.]+) (k|M)?J`).exec(text);
  assert.ok(m, `no ${label} in:\n${text}`);
  return Number(m[1]) * ({ k: 1e3, M: 1e6 }[m[2] ?? ''] ?? 1);
}

/** Writes the epilog's settings file (the wrapper points JOULEGATE_JOB_ENERGY_CONFIG at it). */
function settings(file: string, values: Record<string, string>, owner?: TestUser): void {
  writeFileSync(
    file,
    `${Object.entries(values)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n')}\n`,
    { mode: 0o644 },
  );
  if (owner) chownSync(file, owner.uid, owner.gid);
}

/** Log lines so far of a log file the epilog appends to. */
function logLines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

describe('a real Slurm cluster, the packaged epilog and the job report', { skip }, () => {
  const ctx = whenMet(skip, () => {
    const dir = tempDir('jg-slurm-test-');
    chmodSync(dir, 0o755);
    return {
      dir,
      slurmUser: ensureUser('jg-slurmuser'),
      jobUser: ensureUser('jg-slurmjob'),
      nodeConfig: join(dir, 'node-epilog.conf'),
      ctldConfig: join(dir, 'ctld-epilog.conf'),
      nodeLog: join(dir, 'node-epilog.log'),
      ctldLog: join(dir, 'ctld-epilog.log'),
      reportDir: join(dir, 'reports'),
    };
  });
  let slurm: SlurmCluster;
  let exporter: RunningExporter;
  let prometheus: RunningPrometheus;
  let root: string;
  const slurmEnv = () => ({ ...slurm.env, PATH });

  before(async () => {
    mkdirSync(ctx.reportDir);
    chownSync(ctx.reportDir, ctx.slurmUser.uid, ctx.slurmUser.gid);
    writeFileSync(ctx.ctldLog, '');
    chownSync(ctx.ctldLog, ctx.slurmUser.uid, ctx.slurmUser.gid);
    // Slurm runs the epilogs with its own environment: small wrappers give them the test's
    // settings file, Slurm configuration and PATH, then run the packaged script unchanged.
    const wrapper = (name: string, config: string) => {
      const file = join(ctx.dir, name);
      writeFileSync(
        file,
        [
          '#!/bin/sh',
          `export JOULEGATE_JOB_ENERGY_CONFIG=${config} SLURM_CONF=${join(ctx.dir, 'slurm-conf-link')}`,
          `export PATH=${PATH} JOULEGATE_BIN=${JOULEGATE}`,
          `exec sh ${join(PACKAGING, 'slurm-epilog-job-energy.sh')}`,
          '',
        ].join('\n'),
        { mode: 0o755 },
      );
      return file;
    };
    root = nodeSysroot();
    slurm = await startSlurm({
      slurmUser: ctx.slurmUser,
      epilog: wrapper('epilog-node.sh', ctx.nodeConfig),
      epilogSlurmctld: wrapper('epilog-ctld.sh', ctx.ctldConfig),
    });
    cleanups.push(() => slurm.stop());
    symlinkSync(slurm.env.SLURM_CONF, join(ctx.dir, 'slurm-conf-link'));
    const node = new ScriptedNode(root, [
      { zone: 'intel-rapl:0', watts: PACKAGE_W, startUj: 1_000_000n },
      { zone: 'intel-rapl:0:0', watts: DRAM_W, startUj: 2_000_000n },
    ]);
    node.run();
    cleanups.push(() => node.stop());
    exporter = await startExporter(root, slurm.node, { args: ['--consumers', 'slurm'] });
    cleanups.push(() => exporter.stop());
    prometheus = await startPrometheus([exporter.port], SCRAPE_S);
    cleanups.push(() => prometheus.stop());
    await untilScraped(prometheus.url, [exporter.port]);
  });

  /** Runs `command` as the job's user through srun in `workDir`; resolves with the job id when it starts. */
  function submit(workDir: string, command: string) {
    const child = spawn(
      'setpriv',
      [
        `--reuid=${ctx.jobUser.uid}`,
        `--regid=${ctx.jobUser.gid}`,
        '--init-groups',
        '--reset-env',
        '--',
        'env',
        `SLURM_CONF=${slurm.env.SLURM_CONF}`,
        `PATH=${PATH}`,
        `HOME=${workDir}`,
        `JOULEGATE_SYSROOT=${root}`,
        `XDG_RUNTIME_DIR=${workDir}`,
        'srun',
        '-N1',
        '-n1',
        `--chdir=${workDir}`,
        'sh',
        '-c',
        `echo "JOB=$SLURM_JOB_ID"; ${command}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
    });
    child.stderr!.on('data', (d) => {
      out += d;
    });
    const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
      child.once('exit', (code) => resolve({ code, at: Date.now() })),
    );
    cleanups.push(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const jobId = until(
      'the job to start',
      () => /JOB=(\d+)/.exec(out)?.[1] ?? (child.exitCode !== null ? assert.fail(out) : undefined),
      60_000,
    );
    return { jobId, exited, output: () => out };
  }

  function workDir(): string {
    const d = tempDir('jg-slurm-job-');
    chmodSync(d, 0o755);
    chownSync(d, ctx.jobUser.uid, ctx.jobUser.gid);
    return d;
  }

  /** Milliseconds from the job's end (srun returning) until sinfo shows the node idle again. */
  async function backToIdle(exitedAt: number): Promise<number> {
    const idle = () => {
      try {
        return slurm.nodeState() === 'idle';
      } catch {
        return false; // sinfo timed out on a busy controller: ask again
      }
    };
    await until(`node ${slurm.node} idle again`, idle, 60_000, 50);
    return Date.now() - exitedAt;
  }

  it('a job under srun joulegate monitor: the epilog writes the node and job energy, job-report reads scontrol, top and the exporter see the job', async () => {
    settings(ctx.nodeConfig, {
      JOULEGATE_PROMETHEUS: prometheus.url,
      JOULEGATE_SCRAPE_WAIT: String(2 * SCRAPE_S),
      JOULEGATE_JOB_ENERGY_LOG: ctx.nodeLog,
    });
    settings(
      ctx.ctldConfig,
      {
        JOULEGATE_PROMETHEUS: prometheus.url,
        JOULEGATE_SCRAPE_WAIT: String(2 * SCRAPE_S),
        JOULEGATE_JOB_REPORT_DIR: ctx.reportDir,
        JOULEGATE_JOB_ENERGY_LOG: ctx.ctldLog,
      },
      ctx.slurmUser,
    );
    const dir = workDir();
    // 4 s of busy work: the job's cgroup has CPU time the exporter splits energy by.
    const busy = 'end=$(( $(date +%s) + 4 )); while [ "$(date +%s)" -lt "$end" ]; do :; done';
    const job = submit(dir, `exec ${JOULEGATE} monitor -- sh -c '${busy}'`);
    const id = await job.jobId;
    const consumer = `slurm:${id}`;

    // While it runs: top lists the job, the exporter gives it energy.
    const top = await runCli(['top', '--once'], { env: { JOULEGATE_SYSROOT: root } });
    assert.equal(top.code, 0, top.stderr);
    assert.match(top.stdout, new RegExp(`\\b${consumer}\\b`), top.stdout);
    const labels = `node="${slurm.node}",consumer="${consumer}",consumer_kind="slurm",consumer_id="${id}",device="package"`;
    await until('the exporter to give the job package energy', async () => {
      const v = seriesValue(
        (await scrape(exporter.url)).body,
        'joulegate_consumer_energy_joules_total',
        labels,
      );
      return v !== undefined && v > 0;
    });

    const { code, at } = await job.exited;
    assert.equal(code, 0, job.output());
    // The monitor is rank 0 of the job (SLURM_PROCID): it sampled the node and left nothing behind.
    assert.ok(!readdirSync(dir).some((n) => n.startsWith('joulegate-ranks-')), readdirSync(dir).join(' '));
    const idleMs = await backToIdle(at);
    assert.ok(idleMs <= 5000, `node completing for ${idleMs} ms after the job`);
    const countedJ = seriesValue(
      (await scrape(exporter.url)).body,
      'joulegate_consumer_energy_joules_total',
      labels,
    )!;

    // The node epilog's file, in the job's directory, as the job's user.
    const target = join(dir, `slurm-${id}.energy.txt`);
    await until(
      'the epilog writer',
      () => logLines(ctx.nodeLog).some((l) => l.includes(`wrote ${target}`)),
      120_000,
    );
    assert.equal(statSync(target).uid, ctx.jobUser.uid);
    const text = readFileSync(target, 'utf8');
    assert.match(text, new RegExp(`^Job ${id} energy: `));
    const record = parseScontrolJob(
      (await run('scontrol', ['show', 'job', '-o', id], { env: slurmEnv() })).stdout,
    );
    const windowS = record.end! - record.start!;
    const watts = PACKAGE_W + DRAM_W;
    const nodeJ = joulesIn(text, /Total:/);
    assert.ok(
      Math.abs(nodeJ - watts * windowS) <= watts * SCRAPE_S,
      `node ${nodeJ} J, scripted ${watts * windowS} J over ${windowS} s`,
    );
    const shareJ = joulesIn(text, new RegExp(`Job share \\(${consumer}\\):`));
    assert.ok(shareJ > 0 && shareJ <= nodeJ * 1.001, `job share ${shareJ} J of ${nodeJ} J`);
    assert.match(text, /^Method: job share = /m);
    // One line per outcome in the log.
    assert.equal(
      logLines(ctx.nodeLog).filter((l) => l.includes(`job ${id}:`)).length,
      1,
      logLines(ctx.nodeLog).join('\n'),
    );

    // job-report from the real scontrol (no SLURM_* variables): the same figures, in JSON.
    const r = await runCli(
      ['job-report', '--prometheus', prometheus.url, '--slurm-job', id, '--format', 'json'],
      {
        env: { ...slurmEnv(), SLURM_JOB_ID: undefined, SLURM_JOB_NODELIST: undefined },
      },
    );
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as JobEnergyReport;
    assert.deepEqual(
      report.nodes.map((n) => n.node),
      [slurm.node],
    );
    assert.equal(report.start, new Date(record.start! * 1000).toISOString());
    assert.ok(Math.abs(report.energy - watts * windowS) <= watts * SCRAPE_S);
    assert.equal(report.jobShare?.consumer, consumer);
    assert.ok(
      Math.abs(report.jobShare!.energy - shareJ) <= shareJ * 0.001 + 1e-3,
      `${report.jobShare!.energy} vs ${shareJ}`,
    );
    // The share of the packages is what the exporter counted for the job, within one scrape.
    const pkg = report.nodes[0]!.job!.devices.find((d) => d.kind === 'package')!;
    assert.ok(
      Math.abs(pkg.joules - countedJ) <= PACKAGE_W * SCRAPE_S,
      `package share ${pkg.joules} J, exporter ${countedJ} J`,
    );

    // EpilogSlurmctld: once, as SlurmUser, into the configured directory.
    const ctldFile = join(ctx.reportDir, `slurm-${id}.energy.txt`);
    await until(
      'the controller epilog writer',
      () => existsSync(ctldFile) && readFileSync(ctldFile, 'utf8'),
      120_000,
    );
    assert.equal(statSync(ctldFile).uid, ctx.slurmUser.uid);
    assert.ok(Math.abs(joulesIn(readFileSync(ctldFile, 'utf8'), /Total:/) - nodeJ) <= watts * SCRAPE_S);
    assert.match(job.output(), /joulegate/, 'the monitor ran and reported');
    assert.notEqual(slurm.nodeState(), 'drained');
  });

  it('an epilog without settings, or with Prometheus down, exits 0 at once: the node is idle again within 5 s, one log line', async () => {
    const deadPort = await freePort();
    const cases: { name: string; node: Record<string, string>; expect: RegExp }[] = [
      {
        name: 'unconfigured',
        node: { JOULEGATE_JOB_ENERGY_LOG: ctx.nodeLog },
        expect: /JOULEGATE_PROMETHEUS is not set/,
      },
      {
        name: 'Prometheus down',
        node: {
          JOULEGATE_PROMETHEUS: `http://127.0.0.1:${deadPort}`,
          JOULEGATE_SCRAPE_WAIT: '0',
          JOULEGATE_JOB_ENERGY_LOG: ctx.nodeLog,
        },
        expect: /job-report failed: .*cannot reach Prometheus/,
      },
    ];
    for (const c of cases) {
      settings(ctx.nodeConfig, c.node);
      // The controller's epilog without a report directory: SlurmUser cannot write as the job's user.
      settings(
        ctx.ctldConfig,
        { JOULEGATE_PROMETHEUS: prometheus.url, JOULEGATE_JOB_ENERGY_LOG: ctx.ctldLog },
        ctx.slurmUser,
      );
      const job = submit(workDir(), 'true');
      const id = await job.jobId;
      const { code, at } = await job.exited;
      assert.equal(code, 0, job.output());
      const idleMs = await backToIdle(at);
      assert.ok(idleMs <= 5000, `${c.name}: node completing for ${idleMs} ms after the job`);
      const mine = () => logLines(ctx.nodeLog).filter((l) => l.includes(`job ${id}:`));
      await until(`${c.name}: the epilog's log line`, () => mine().length > 0);
      assert.equal(mine().length, 1, mine().join('\n'));
      assert.match(mine()[0]!, c.expect);
      await until(`${c.name}: the controller epilog's log line`, () =>
        logLines(ctx.ctldLog).some((l) => l.includes(`job ${id}:`) && /set JOULEGATE_JOB_REPORT_DIR/.test(l)),
      );
      assert.equal(slurm.nodeState(), 'idle', `${c.name}: ${slurm.logs()}`);
    }
  });
});
