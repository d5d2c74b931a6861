import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { runTop, type TopTable } from '../../src/monitor/top.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { procStat, put, type ScriptedProcess, writeProcess } from '../attribution/helpers.js';
import { CLI, run, runCli } from '../helpers/cli.js';
import { raplApp } from '../helpers/rapl-app.js';
import { needsAdmin } from '../helpers/requirements.js';
import { copyFixture, FIXTURES, tempDir } from '../helpers/tmp.js';

const admin = needsAdmin();

// `joulegate top` on the attribution fixture node (2 packages × 2 CPUs, RAPL read by the real
// POWERCAP backend, a cgroup v2 tree with Slurm jobs and a container scope), its kernel files
// set to the steps of test/fixtures/attribution/script.json between two readings.
interface Step {
  cpus: [number, number][];
  usage_usec: Record<string, number | null>;
  procs: Record<string, ScriptedProcess | null>;
  energy_uj: Record<string, number | string>;
}
const script = JSON.parse(readFileSync(`${FIXTURES}attribution/script.json`, 'utf8')) as { steps: Step[] };
const PTY_RUN = new URL('../helpers/pty-run.py', import.meta.url).pathname;
const SCOPE = 'sys/fs/cgroup/system.slice/slurmstepd.scope';

function apply(root: string, step: Step): void {
  put(root, 'proc/stat', procStat(step.cpus));
  for (const [job, usage] of Object.entries(step.usage_usec)) {
    if (usage !== null)
      put(root, `${SCOPE}/${job}/cpu.stat`, `usage_usec ${usage}\nuser_usec ${usage}\nsystem_usec 0\n`);
  }
  for (const [pid, p] of Object.entries(step.procs)) writeProcess(root, Number(pid), p);
  for (const [zone, value] of Object.entries(step.energy_uj))
    put(root, `sys/class/powercap/${zone}/energy_uj`, `${value}\n`);
}

/** The fixture node with a DRAM zone in package 1 as well (unchanging), as real two-socket nodes have. */
function node(): string {
  const root = copyFixture('attribution/node');
  const zone = 'sys/class/powercap/intel-rapl:1:0';
  put(root, `${zone}/name`, 'dram\n');
  put(root, `${zone}/energy_uj`, '1000000\n');
  put(root, `${zone}/max_energy_range_uj`, '65712999613\n');
  apply(root, script.steps[0]!);
  return root;
}

const joules = (t: TopTable, id: string) => {
  const row = [...t.consumers, t.unattributed, t.idle, t.node].find((r) => r.id === id);
  assert.ok(row, `${id} in ${JSON.stringify(t.consumers.map((r) => r.id))}`);
  return row.watts * t.durationS;
};

describe('top: consumers found in the cgroup tree, their power each period', async () => {
  const root = node();
  const pio = await loadPlatform({ sysroot: new Sysroot(root) });
  const tables: TopTable[] = [];
  await runTop({
    pio,
    root: new Sysroot(root),
    periodS: 0.05,
    iterations: 3,
    limit: 3,
    idleShare: 'none',
    estimateTdp: 0,
    onTable: (t) => {
      tables.push(t);
      apply(root, script.steps[tables.length]!);
    },
  });
  await pio.close();

  it('finds the Slurm jobs (both stepd scopes) and system units, not the scopes themselves', () => {
    const ids = [...tables[0]!.consumers.map((r) => r.id), tables[0]!.rest?.id];
    assert.equal(tables[0]!.rest?.count, 1, JSON.stringify(ids));
    assert.deepEqual(tables[0]!.sources, [
      { group: 'cpu', method: 'counter' },
      { group: 'ram', method: 'counter' },
    ]);
    assert.ok(!ids.some((id) => id?.includes('slurmstepd')), ids.join(' '));
  });

  it('a period with the counters still: 0 W everywhere', () => {
    assert.equal(tables[0]!.node.watts, 0);
  });

  it('interval 1 of the script: the jobs get their CPU-time shares of each package exactly', () => {
    const t = tables[1]!;
    // Package 0 (30 J; busy 1.6 s; job 101 1.0 s, job 202 0.2 s), its DRAM (4 J) by the same
    // weights, package 1 (17 J across a wrap at max_energy_range_uj + 1; job 202 0.6 s of 1.2 s busy).
    assert.ok(Math.abs(joules(t, 'slurm:101') - 21.25) < 1e-6, String(joules(t, 'slurm:101')));
    assert.ok(Math.abs(joules(t, 'slurm:202') - 12.75) < 1e-6, String(joules(t, 'slurm:202')));
    assert.ok(Math.abs(joules(t, 'node') - 51) < 1e-6);
    assert.ok(Math.abs(joules(t, '(unattributed)') - 17) < 1e-6);
    assert.deepEqual(
      t.consumers.map((r) => r.id),
      ['slurm:101', 'slurm:202', 'slurm:404'],
      'sorted by power, ties by name',
    );
  });

  it('every table: consumers + rest + unattributed + idle = node', () => {
    for (const t of tables) {
      const parts = [...t.consumers, ...(t.rest ? [t.rest] : []), t.unattributed, t.idle];
      const sum = parts.reduce((a, r) => a + r.watts, 0);
      assert.ok(Math.abs(sum - t.node.watts) < 1e-6, `${sum} vs ${t.node.watts}`);
    }
  });
});

describe('joulegate top (CLI)', () => {
  it('--iterations 2 on a pipe: two plain-text tables sorted by power, with idle and unattributed rows', async () => {
    const root = node();
    const dir = tempDir();
    const writer = spawn(
      process.execPath,
      [raplApp(dir, root, [{ zone: 'intel-rapl:0', joules: 0.5 }], 3000, 10)],
      {
        stdio: 'ignore',
      },
    );
    const r = await runCli(['top', '--iterations', '2', '--period', '0.2', '--idle-power', '1,1'], {
      env: { JOULEGATE_SYSROOT: root },
    });
    writer.kill();
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('\u001b'), 'no terminal control on a pipe');
    const tables = r.stdout.trim().split('\n\n');
    assert.equal(tables.length, 2, r.stdout);
    for (const t of tables) {
      const lines = t.split('\n');
      assert.match(lines[0]!, /^joulegate top {2}\S+ {2}period 0\.\d\d s {2}\(cpu counter, ram counter\)$/);
      assert.match(lines[1]!, /^CONSUMER +POWER +CPU +RAM +SHARE$/);
      assert.deepEqual(
        lines.slice(2).map((l) => l.split(/ {2,}/)[0]),
        [
          'slurm:101',
          'slurm:202',
          'slurm:404',
          `system:${readDockerScope(root)}`,
          '(unattributed)',
          '(idle)',
          'node',
        ],
      );
      assert.match(lines.at(-3)!, /^\(unattributed\) +\d+\.\d\d W/);
      // Package 0 draws 50 W: 1 W of it is idle; package 1 draws nothing, so none of it is.
      assert.match(lines.at(-2)!, /^\(idle\) +1\.00 W +1\.00 W +0\.00 W /);
    }
  });

  it('a package without a RAPL zone: the other is attributed, and the missing one is named', async () => {
    const root = node();
    rmSync(join(root, 'sys/class/powercap/intel-rapl:1'), { recursive: true });
    rmSync(join(root, 'sys/class/powercap/intel-rapl:1:0'), { recursive: true });
    const pio = await loadPlatform({ sysroot: new Sysroot(root) });
    const warnings: string[] = [];
    const tables: TopTable[] = [];
    await runTop({
      pio,
      root: new Sysroot(root),
      periodS: 0.05,
      iterations: 1,
      limit: 3,
      idleShare: 'none',
      estimateTdp: 0,
      warn: (line) => warnings.push(line),
      onTable: (t) => tables.push(t),
    });
    await pio.close();
    assert.equal(tables.length, 1);
    assert.ok(
      warnings.some((w) =>
        /not attributed: CPU_ENERGY package 1: no package RAPL zone with an energy counter for package 1/.test(
          w,
        ),
      ),
      warnings.join('\n'),
    );
  });

  it('on a terminal: each table replaces the last, until Ctrl-C', async () => {
    const root = node();
    const spec = {
      argv: ['env', `JOULEGATE_SYSROOT=${root}`, process.execPath, CLI, 'top', '--period', '0.2'],
      steps: [{ wait: '(?s)CONSUMER.*CONSUMER.*node[^\\n]*\\n', send: '\u0003' }],
      timeout: 30,
    };
    const r = await run('/usr/bin/python3', [PTY_RUN, JSON.stringify(spec)], { timeoutMs: 40_000 });
    const result = JSON.parse(r.stdout) as { status: number; output: string; timeout: boolean };
    assert.equal(result.timeout, false, result.output);
    assert.equal(result.status, 0, result.output);
    const clears = result.output.split('\u001b[H\u001b[2J').length - 1;
    assert.ok(clears >= 2, `${clears} screen clears in ${JSON.stringify(result.output)}`);
  });

  it('a node with nothing to measure or estimate: one line naming the way out', { skip: admin }, async () => {
    const root = node();
    rmSync(join(root, 'sys/class/powercap'), { recursive: true });
    const r = await runCli(['top', '--once'], { env: { JOULEGATE_SYSROOT: root } });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: no CPU, RAM or GPU energy source .* --estimate-tdp W/);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  });

  it('an empty table says why: no cgroup hierarchy, or one without consumers', async () => {
    const vm = copyFixture('vm-1s4c');
    const once = () => runCli(['top', '--once', '--period', '0.1'], { env: { JOULEGATE_SYSROOT: vm } });
    let r = await once();
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.deepEqual(
      lines.slice(2, 5).map((l) => l.split(/ {2,}/)[0]),
      ['(unattributed)', '(idle)', 'node'],
      'no consumer rows, the node still measured',
    );
    assert.equal(
      lines[5],
      'no consumers: no cgroup hierarchy at /sys/fs/cgroup (v2, or v1 with cpuacct): consumers are found as cgroups',
    );
    put(vm, 'sys/fs/cgroup/cgroup.controllers', 'cpuset cpu io memory pids\n');
    put(vm, 'sys/fs/cgroup/init.scope/cgroup.procs', '1\n');
    r = await once();
    assert.equal(r.code, 0, r.stderr);
    assert.ok(
      r.stdout.includes(
        '\nno consumers: no Slurm job, user session (user.slice/user-UID.slice) or system unit (system.slice) cgroup under /sys/fs/cgroup\n',
      ),
      r.stdout,
    );
    // A unit whose cgroup has no CPU accounting cannot be followed: that, not an empty list.
    put(vm, 'sys/fs/cgroup/system.slice/db.service/cgroup.procs', '');
    r = await once();
    assert.equal(r.code, 0, r.stderr);
    assert.ok(
      r.stdout.includes(
        '\nno consumers: 1 consumer cgroup found, none readable (system:db.service: cgroup /system.slice/db.service: not found (no cpu.stat or cpuacct.usage under /sys/fs/cgroup))\n',
      ),
      r.stdout,
    );
  });

  it('an unreadable /proc/stat is named: consumers cannot be told apart from other processes', async () => {
    const root = node();
    rmSync(join(root, 'proc/stat'));
    const r = await runCli(['top', '--once', '--period', '0.1'], { env: { JOULEGATE_SYSROOT: root } });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes('\nslurm:101 '), r.stdout);
    assert.ok(
      r.stdout.includes(
        "\nnode CPU time unknown (/proc/stat: no such file): the consumers' use cannot be told apart from other processes'\n",
      ),
      r.stdout,
    );
  });

  it('bad options are one line', async () => {
    for (const args of [
      ['--period', '0'],
      ['--iterations', 'x'],
      ['--idle-share', 'x'],
      ['--top', '0'],
    ]) {
      const r = await runCli(['top', ...args]);
      assert.notEqual(r.code, 0);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });
});

function readDockerScope(root: string): string {
  return new Sysroot(root).list('/sys/fs/cgroup/system.slice').find((d) => d.startsWith('docker-'))!;
}
