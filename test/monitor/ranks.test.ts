import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { combineReports } from '../../src/cluster/job-report/from-reports.js';
import type { Report } from '../../src/monitor/model/report-model.js';
import { NodeRanks, rankIdentity } from '../../src/monitor/ranks.js';
import { processExists } from '../../src/platform/process.js';
import { runCli } from '../helpers/cli.js';
import { onlyFile, readReport } from '../helpers/hdf5-reports.js';
import { until } from '../helpers/poll.js';
import { needsTool } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const RAPL = 'sys/class/powercap';

/** Adds `joules` to a fixture's RAPL zone in place (one write of the same length, never truncated). */
function advance(root: string, zone: number, joules: number): void {
  const path = join(root, RAPL, `intel-rapl:${zone}`, 'energy_uj');
  const next = String(Number(readFileSync(path, 'utf8')) + joules * 1e6);
  const fd = openSync(path, 'r+');
  writeSync(fd, next, 0);
  closeSync(fd);
}

const FACTORS = { pue: 1, emissionsFactor: 0, priceFactor: 0, priceUnit: 'EUR' };

/** Debian's interpreter, as CI has it. */
const PYTHON = '/usr/bin/python3';
const skip = needsTool('python3');

/**
 * A Python app per rank (the package's `joulegate` module, which the monitor puts on its
 * PYTHONPATH): says it started, records a region `work` until the test lets it go, and says
 * when it is about to exit.
 */
function rankApp(dir: string): string {
  const app = join(dir, 'rank_app.py');
  writeFileSync(
    app,
    `import os, time, joulegate
rank = os.environ["SLURM_PROCID"]
ctl = ${JSON.stringify(dir)}
open(os.path.join(ctl, "started-" + rank), "w").close()
with joulegate.region("work"):
    while not os.path.exists(os.path.join(ctl, "stop-" + rank)):
        time.sleep(0.01)
open(os.path.join(ctl, "exiting-" + rank), "w").close()
`,
  );
  return app;
}

/** One rank's `joulegate monitor` of the rank app, as `srun` starts it (the job's Slurm variables). */
function monitorRank(o: { root: string; ctl: string; xdg: string; app: string; job: string; rank: number }) {
  return runCli(
    [
      'monitor',
      '--sampling-period',
      '0.05',
      '-f',
      'json,text',
      '--data-out',
      join(o.ctl, `out-${o.rank}`),
      '-n',
      'ranks',
      '--',
      PYTHON,
      o.app,
    ],
    {
      env: {
        JOULEGATE_SYSROOT: o.root,
        XDG_RUNTIME_DIR: o.xdg,
        SLURM_JOB_ID: o.job,
        SLURM_STEP_ID: '0',
        SLURM_PROCID: String(o.rank),
      },
      cwd: o.ctl,
      timeoutMs: 120_000,
    },
  );
}

/** The meeting directory of the (one) job's ranks under `xdg`. */
function meetingDir(xdg: string): string {
  const base = join(xdg, `joulegate-ranks-${process.getuid!()}`);
  return join(base, readdirSync(base)[0]!);
}

/** The claim of the node's sampler. */
const samplerClaim = (xdg: string) =>
  JSON.parse(readFileSync(join(meetingDir(xdg), 'sampler'), 'utf8')) as { rank: string; pid: number };

/** `n` ranks of `job` started at once on a fresh fixture node; resolves once every rank app runs. */
async function startRanks(n: number, job: string) {
  const root = copyFixture('energy/amd-epyc');
  const ctl = tempDir();
  const xdg = tempDir();
  const app = rankApp(ctl);
  const ranks = Array.from({ length: n }, (_, r) => r);
  const runs = ranks.map((rank) => monitorRank({ root, ctl, xdg, app, job, rank }));
  await until(
    'every rank app started',
    () => ranks.every((r) => existsSync(join(ctl, `started-${r}`))),
    30_000,
    20,
  );
  return { root, ctl, xdg, app, job, runs };
}

describe('several ranks of one job on one node', () => {
  it('names the job and rank from Slurm, Open MPI, PMIx, PMI or the launcher; nothing outside a launch', () => {
    assert.equal(rankIdentity({}), undefined);
    assert.deepEqual(
      ['key', 'rank'].map(
        (k) => rankIdentity({ SLURM_JOB_ID: '77', SLURM_STEP_ID: '3', SLURM_PROCID: '5' })![k as 'key'],
      ),
      ['slurm-77.3', '5'],
    );
    assert.equal(
      rankIdentity({ OMPI_COMM_WORLD_RANK: '2', PMIX_NAMESPACE: 'prterun-x@1' })!.key,
      'pmix-prterun-x@1',
    );
    const hydra = rankIdentity({ PMI_RANK: '1' }, 4242)!;
    assert.deepEqual([hydra.key, hydra.rank], ['launcher-4242', '1']);
    assert.equal(rankIdentity({ JOULEGATE_JOB_KEY: 'mine', PMI_RANK: '0' })!.key, 'key-mine');
  });

  it('4 monitors started at once measure the node once, the sampler outliving its own app', {
    skip,
  }, async () => {
    const job = `t${process.pid}`;
    const { root, ctl, xdg, runs } = await startRanks(4, job);
    const sampler = Number(samplerClaim(xdg).rank);
    // 40 J while all run; the sampler's app ends first; 25 J more while the others still run.
    advance(root, 0, 40);
    writeFileSync(join(ctl, `stop-${sampler}`), '');
    await until(
      "the sampler's app is exiting",
      () => existsSync(join(ctl, `exiting-${sampler}`)),
      30_000,
      20,
    );
    advance(root, 0, 25);
    for (const r of [0, 1, 2, 3].filter((r) => r !== sampler)) writeFileSync(join(ctl, `stop-${r}`), '');
    const results = await Promise.all(runs);
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    // The sampler removed the meeting directory once it held every rank's record: nothing is left.
    assert.deepEqual(readdirSync(xdg), []);

    const reports = [0, 1, 2, 3].map((r) => readReport(onlyFile(join(ctl, `out-${r}`), /\.json$/)) as Report);
    const energies = reports.map((r) => r.rounds[0]!.metrics.host.energy);
    const lead = reports[sampler]!;
    // The node's energy, once: the fixture's advance, not 4×, in the sampler's report alone.
    assert.ok(Math.abs(lead.rounds[0]!.metrics.host.energy - 65) < 1e-6, `sampler: ${energies}`);
    const counted = energies.filter((e) => Number.isFinite(e));
    assert.equal(counted.length, 1, `node energy in ${counted.length} reports: ${energies}`);
    assert.equal(lead.ranks!.role, 'sampler');
    assert.deepEqual(
      lead.ranks!.members.map((m) => [m.rank, m.state]).sort(),
      [0, 1, 2, 3].filter((r) => r !== sampler).map((r) => [String(r), 'finished']),
    );
    assert.match(lead.ranks!.note, /counted once, here/);
    // Its regions: every rank's `work`.
    assert.deepEqual(
      lead.regions.map((g) => g.name).sort(),
      [0, 1, 2, 3].map((r) => `rank ${r}/work`),
    );
    for (const [r, report] of reports.entries()) {
      if (r === sampler) continue;
      assert.equal(report.ranks!.role, 'contributor');
      assert.equal(report.ranks!.sampler.rank, String(sampler));
      assert.equal(report.series.length, 0, 'a contributor samples nothing');
      assert.match(
        readFileSync(onlyFile(join(ctl, `out-${r}`), /\.txt$/), 'utf8'),
        /Ranks: rank \d of slurm-/,
      );
    }
    // The job report over all four reports counts the node once.
    const jr = await runCli(
      ['job-report', '--format', 'json', '--reports', ...[0, 1, 2, 3].map((r) => join(ctl, `out-${r}`))],
      { cwd: ctl },
    );
    assert.equal(jr.code, 0, jr.stderr);
    const job_ = JSON.parse(jr.stdout) as { nodes: { joules: number }[]; notes: string[] };
    assert.equal(job_.nodes.length, 1);
    assert.ok(Math.abs(job_.nodes[0]!.joules - 65) < 1e-6, jr.stdout);
    // Reports without the ranks note (as from HDF5, which does not keep it): the one that
    // measured energy is the node's, whichever rank ran longest.
    const bare = reports.map((report, r) => {
      const { ranks: _ranks, ...rest } = structuredClone(report);
      // As if this rank's app had run longer than the sampler's wait.
      if (r !== sampler) rest.rounds[0]!.metrics.host.runtime = 1e6;
      return { path: `rank-${r}`, report: rest as Report };
    });
    const combined = combineReports(bare, undefined, { job: job, source: 'test' }, FACTORS);
    assert.equal(combined.nodes.length, 1);
    assert.ok(Math.abs(combined.nodes[0]!.joules - 65) < 1e-6, `${combined.nodes[0]!.joules} J`);
  });

  it('a crashed sampler: the other ranks finish and say so; the next monitor of the job takes over', {
    skip,
  }, async () => {
    const o = await startRanks(3, `c${process.pid}`);
    const { ctl, xdg, runs } = o;
    const claim = samplerClaim(xdg);
    process.kill(claim.pid, 'SIGKILL');
    // SIGKILL returns before the process has ended; a loaded machine may let the others finish first.
    await until('the killed sampler has ended', () => !processExists(claim.pid), 30_000, 10);
    // Its app is left running (as after a crash of the monitor alone): let every app go.
    for (const r of [0, 1, 2]) writeFileSync(join(ctl, `stop-${r}`), '');
    const results = await Promise.all(runs);
    for (const [r, res] of results.entries()) {
      if (String(r) === claim.rank) {
        assert.equal(res.signal, 'SIGKILL');
        continue;
      }
      assert.equal(res.code, 0, res.stderr);
      const report = readReport(onlyFile(join(ctl, `out-${r}`), /\.json$/)) as Report;
      assert.equal(report.ranks!.role, 'contributor');
      assert.match(
        report.ranks!.notes.join('\n'),
        new RegExp(`sampler rank ${claim.rank} \\(pid ${claim.pid}\\) ended before this rank finished`),
      );
    }
    await until(
      "the dead sampler's app has exited",
      () => existsSync(join(ctl, `exiting-${claim.rank}`)),
      30_000,
      20,
    );
    // A later monitor of the same job finds the dead claim and samples the node itself.
    writeFileSync(join(ctl, 'stop-3'), '');
    const late = await monitorRank({ ...o, rank: 3 });
    assert.equal(late.code, 0, late.stderr);
    const report = readReport(onlyFile(join(ctl, 'out-3'), /\.json$/)) as Report;
    assert.equal(report.ranks!.role, 'sampler');
    assert.match(report.ranks!.notes.join('\n'), /had ended without closing; this rank took over/);
    assert.ok(Number.isFinite(report.rounds[0]!.metrics.host.energy));
  });
});

describe("the node's sampler election", () => {
  const id = { key: 'key-election', rank: '1', source: 'test' };
  /** A meeting directory whose `sampler` claim exists but is still empty, as while it is written. */
  function withEmptyClaim(): string {
    const dir = join(tempDir(), 'meeting');
    mkdirSync(dir);
    writeFileSync(join(dir, 'sampler'), '');
    return dir;
  }

  it('a claim still being written is waited for: the rank joins that sampler', async () => {
    const dir = withEmptyClaim();
    // Another process completes the claim a little later, naming this (live) process as sampler.
    const writer = spawn(process.execPath, [
      '-e',
      `setTimeout(() => { const fs = require('node:fs'); fs.writeFileSync(process.argv[1] + '.w', process.argv[2]); fs.renameSync(process.argv[1] + '.w', process.argv[1]); }, 200)`,
      join(dir, 'sampler'),
      JSON.stringify({ rank: '0', pid: process.pid }),
    ]);
    const exited = new Promise((resolve) => writer.once('exit', resolve));
    try {
      const ranks = NodeRanks.join(id, dir);
      assert.equal(ranks.role, 'contributor');
      assert.deepEqual(ranks.sampler, { rank: '0', pid: process.pid });
      assert.deepEqual(ranks.notes, []);
    } finally {
      await exited;
    }
  });

  it('a claim that stays unreadable is taken over after a wait, and the report says so', () => {
    const dir = withEmptyClaim();
    const started = Date.now();
    const ranks = NodeRanks.join(id, dir);
    assert.ok(Date.now() - started >= 2000, 'waited for the claim to be written');
    assert.equal(ranks.role, 'sampler');
    assert.match(ranks.notes.join('\n'), /claim could not be read for 2000 ms; this rank took over/);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'sampler'), 'utf8')), { rank: '1', pid: process.pid });
    assert.ok(existsSync(join(dir, 'sampler.dead-unreadable')));
    assert.deepEqual(
      readdirSync(dir).filter((n) => n.startsWith('sampler.new-')),
      [],
      'no file of the claim left behind',
    );
  });
});
