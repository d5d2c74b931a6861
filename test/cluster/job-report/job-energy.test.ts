import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { JobEnergyReport } from '../../../src/cluster/job-report/job-energy.js';
import { run, runCli } from '../../helpers/cli.js';
import { freePort, type RunningExporter, startExporter } from '../../helpers/exporter.js';
import { until } from '../../helpers/poll.js';
import {
  type RunningPrometheus,
  ScriptedNode,
  scrapesOf,
  startPrometheus as startPrometheusOn,
} from '../../helpers/prometheus.js';
import { needsRoot, needsTool } from '../../helpers/requirements.js';
import { pathWith, SCONTROL_WITHOUT_SLURM, standIn } from '../../helpers/stand-ins.js';
import { copyFixture, tempDir } from '../../helpers/tmp.js';

const epilogAsOwner = needsRoot("lets the Slurm epilog write the report as the job's user");

const skip = needsTool('prometheus');

/*
 * The done-when test of the cluster exporter: a real Prometheus (Debian's) scrapes three
 * exporters standing for three nodes, each on its own fixture sysroot whose RAPL counters this
 * test advances at scripted constant power. Node 2's package 0 counter wraps inside the window
 * (max_energy_range_uj); node 3's exporter is down for more than two scrapes. The job report over
 * the window must match the scripted energy within one scrape interval × power, state node 3's
 * gap, and never count it as zero.
 */

const SCRAPE_S = 1;
const PACKAGING = new URL('../../../packaging/', import.meta.url).pathname;
const BIN = new URL('../../../bin/', import.meta.url).pathname;
const NODES = ['node1', 'node2', 'node3'] as const;
/** Watts of each node's zones: package 0, package 1, dram (attribution/node fixture zones). */
const WATTS: Record<(typeof NODES)[number], [number, number, number]> = {
  node1: [30, 20, 5],
  node2: [60, 10, 4],
  node3: [15, 15, 3],
};
const ZONES = ['intel-rapl:0', 'intel-rapl:1', 'intel-rapl:0:0'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A node of the attribution/node fixture at `watts` (package 0, package 1, dram). */
function scriptedNode(watts: readonly number[], startUj: readonly bigint[]): ScriptedNode {
  const root = copyFixture('attribution/node');
  return new ScriptedNode(
    root,
    ZONES.map((zone, i) => ({ zone, watts: watts[i]!, startUj: startUj[i]! })),
  );
}

async function startPrometheus(targets: Record<string, number>): Promise<RunningPrometheus> {
  const p = await startPrometheusOn(Object.values(targets), SCRAPE_S);
  cleanups.push(() => p.stop());
  return p;
}

describe('Prometheus scraping three exporters, and the job report', { skip }, () => {
  it('reports each node and the total from the scripted counters, with a wrap and a node down as a gap', {
    skip: epilogAsOwner,
  }, async () => {
    // Node 2's package 0 starts 100 J below its wrap: at 60 W it wraps about 1.7 s in.
    const range = 262_143_328_850n;
    const nodes = {
      node1: scriptedNode(WATTS.node1, [5_000_000n, 7_000_000n, 1_000_000n]),
      node2: scriptedNode(WATTS.node2, [range - 100_000_000n, 2_000_000n, 3_000_000n]),
      node3: scriptedNode(WATTS.node3, [9_000_000n, 9_000_000n, 9_000_000n]),
    };
    for (const n of Object.values(nodes)) {
      n.run();
      cleanups.push(() => n.stop());
    }
    const exporters: Record<string, RunningExporter> = {};
    for (const name of NODES) {
      exporters[name] = await startExporter(nodes[name].root, name, { args: ['--consumers', 'none'] });
      cleanups.push(() => exporters[name]!.stop());
    }
    const ports = Object.fromEntries(NODES.map((n) => [n, exporters[n]!.port]));
    const prometheus = await startPrometheus(ports);

    // Wait until Prometheus has scraped every node at least 3 times.
    for (let i = 0; ; i++) {
      const counts = await Promise.all(NODES.map((n) => scrapesOf(prometheus.url, ports[n]!, 60)));
      if (counts.every((c) => c.filter((v) => v === 1).length >= 3)) break;
      assert.ok(i < 300, `fewer than 3 scrapes per node in 60 s: ${JSON.stringify(counts)}`);
      await sleep(200);
    }
    const start = Date.now() / 1000;
    await sleep(3500);
    // Node 3 goes down for more than two scrapes, then its exporter starts again (counters from 0).
    await exporters.node3!.stop();
    const downAt = Date.now() / 1000;
    await sleep(2600);
    // Taken before the start: Prometheus may scrape the new exporter as soon as it listens, before
    // this (loaded) test process has seen it start, so a time taken after could be later than
    // the first sample after the restart.
    const upAt = Date.now() / 1000;
    exporters.node3 = await startExporter(nodes.node3.root, 'node3', {
      port: ports.node3,
      args: ['--consumers', 'none'],
    });
    await sleep(3500);
    const end = Date.now() / 1000;
    // Samples after the end let the report interpolate the window's end.
    await sleep(2500);
    const downCounts = await scrapesOf(prometheus.url, ports.node3!, 30);
    assert.ok(downCounts.filter((v) => v === 0).length >= 2, `node3 down for ≥ 2 scrapes: ${downCounts}`);

    const env = { SLURM_JOB_ID: '4242', SLURM_JOB_NODELIST: 'node[1-3],node9' };
    const r = await runCli(
      [
        'job-report',
        '--prometheus',
        prometheus.url,
        '--slurm-job',
        '4242',
        '--start',
        start.toFixed(3),
        '--end',
        end.toFixed(3),
        '--format',
        'json',
      ],
      { env },
    );
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as JobEnergyReport;
    const windowS = end - start;
    const byNode = new Map(report.nodes.map((n) => [n.node, n]));
    assert.deepEqual([...byNode.keys()], ['node1', 'node2', 'node3', 'node9']);
    const sum = (w: readonly number[]) => w.reduce((a, b) => a + b, 0);

    for (const name of ['node1', 'node2'] as const) {
      const n = byNode.get(name)!;
      const watts = sum(WATTS[name]);
      assert.ok(
        Math.abs(n.joules - watts * windowS) <= watts * SCRAPE_S,
        `${name}: ${n.joules} J, scripted ${watts * windowS} J`,
      );
      assert.equal(n.coverage, 100, `${name} coverage`);
      assert.deepEqual(
        n.devices.map((d) => `${d.kind} ${d.index}`),
        ['package 0', 'package 1', 'dram 0'],
      );
      const pkg0 = n.devices[0]!;
      assert.ok(Math.abs(pkg0.joules - WATTS[name][0] * windowS) <= WATTS[name][0] * SCRAPE_S);
    }

    const n3 = byNode.get('node3')!;
    const watts3 = sum(WATTS.node3);
    const restart = n3.devices[0]!.gaps.find((g) => g.kind === 'restart');
    assert.ok(restart, `node3 has a restart gap: ${JSON.stringify(n3.devices[0]!.gaps)}`);
    assert.ok(restart.start <= downAt && restart.end >= upAt, JSON.stringify({ restart, downAt, upAt }));
    const coveredS = (n3.coverage / 100) * windowS;
    assert.ok(coveredS < windowS - 2 * SCRAPE_S, `node3 coverage ${n3.coverage} %`);
    assert.ok(
      Math.abs(n3.joules - watts3 * coveredS) <= watts3 * SCRAPE_S,
      `node3: ${n3.joules} J, scripted over its covered ${coveredS} s: ${watts3 * coveredS} J`,
    );

    // A node Prometheus never scraped: no data, stated, and no number.
    const n9 = byNode.get('node9')!;
    assert.equal(n9.joules, null);
    assert.equal(n9.coverage, 0);

    const measured = ['node1', 'node2', 'node3'].map((n) => byNode.get(n)!.joules);
    assert.ok(Math.abs(report.energy - sum(measured)) < 1e-6);
    assert.equal(report.complete, false);
    assert.ok(
      report.gaps.some((g) =>
        /^node3 \(all devices\): exporter restarted, energy before the restart unknown, /.test(g),
      ),
      report.gaps.join('\n'),
    );
    assert.ok(report.gaps.some((g) => /^node9: no energy data for the window/.test(g)));
    assert.equal(report.job, '4242');
    // CO2 and cost with the monitor's default factors (230 gCO2e/kWh, 0.2678 €/kWh, PUE 1).
    assert.ok(Math.abs(report.co2 - (report.energy / 3.6e6) * 230) < 1e-9);
    assert.ok(Math.abs(report.money - (report.energy / 3.6e6) * 0.2678) < 1e-12);

    // The same window as text and CSV, with the nodes given directly.
    const text = await runCli([
      'job-report',
      '--prometheus',
      prometheus.url,
      '--nodes',
      'node1,node2,node3',
      '--start',
      new Date(start * 1000).toISOString(),
      '--end',
      new Date(end * 1000).toISOString(),
      '--format',
      'text,csv',
      '--pue',
      '1.5',
    ]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /\| +node3 \| .* J \| +\d+\.\d % \|/);
    assert.match(text.stdout, /incomplete: a lower bound/);
    assert.match(
      text.stdout,
      /Gaps \(missing scrapes are not zero energy\):\n- node3 \(all devices\): exporter restarted/,
    );
    assert.match(text.stdout, /at PUE 1\.5/);
    assert.match(text.stdout, /^job,node,device,index,energy_j,covered_s,window_s,gaps$/m);
    assert.match(text.stdout, /^,node2,package,0,[\d.]+,/m);

    // The Slurm epilog (packaging/) writes the same report into the job's directory. Slurm is not
    // installed here: a stand-in scontrol prints the job record as Slurm formats it (local time).
    const bin = tempDir('joulegate-fake-slurm-');
    const workDir = tempDir('joulegate-job-dir-');
    const local = (unixS: number) => {
      const d = new Date(Math.round(unixS) * 1000);
      const p2 = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())}T${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
    };
    writeFileSync(
      join(bin, 'scontrol'),
      `#!/bin/sh\necho "JobId=4242 JobName=app\n   UserId=root(0) GroupId=root(0)\n   StartTime=${local(start)} EndTime=${local(end)} Deadline=N/A\n   NodeList=node[1-3]\n   WorkDir=${workDir}"\n`,
      { mode: 0o755 },
    );
    const epilogLog = join(tempDir('joulegate-epilog-log-'), 'epilog.log');
    const epilog = await run('sh', [join(PACKAGING, 'slurm-epilog-job-energy.sh')], {
      env: {
        SLURM_JOB_ID: '4242',
        SLURM_JOB_NODELIST: undefined,
        JOULEGATE_JOB_ENERGY_CONFIG: '/nonexistent',
        JOULEGATE_JOB_ENERGY_LOG: epilogLog,
        JOULEGATE_PROMETHEUS: prometheus.url,
        JOULEGATE_SCRAPE_WAIT: '0',
        PATH: `${bin}:${BIN}:${process.env.PATH}`,
      },
    });
    assert.equal(epilog.code, 0, epilog.stderr);
    // The epilog returns at once; its detached writer logs when the file is in place.
    const target = join(workDir, 'slurm-4242.energy.txt');
    await until(
      'the epilog writer',
      () => existsSync(epilogLog) && readFileSync(epilogLog, 'utf8').includes(`wrote ${target}`),
    );
    const written = readFileSync(target, 'utf8');
    assert.match(written, /^Job 4242 energy: /);
    for (const n of ['node1', 'node2', 'node3'])
      assert.match(written, new RegExp(`\\| +${n} \\| +[\\d.]+ k?J \\|`));

    // Outside the job (no SLURM_* variables), --slurm-job asks scontrol for nodes and window.
    const bySlurm = await runCli(
      ['job-report', '--prometheus', prometheus.url, '--slurm-job', '4242', '--format', 'json'],
      {
        env: { SLURM_JOB_ID: undefined, SLURM_JOB_NODELIST: undefined, PATH: `${bin}:${process.env.PATH}` },
      },
    );
    assert.equal(bySlurm.code, 0, bySlurm.stderr);
    const fromSlurm = JSON.parse(bySlurm.stdout) as JobEnergyReport;
    assert.deepEqual(
      fromSlurm.nodes.map((n) => n.node),
      ['node1', 'node2', 'node3'],
    );
    assert.equal(fromSlurm.start, new Date(Math.round(start) * 1000).toISOString());
    assert.equal(fromSlurm.end, new Date(Math.round(end) * 1000).toISOString());
  });

  it('an exporter down for over 10 s and restarted on its state directory loses no energy', async () => {
    const node = scriptedNode(WATTS.node1, [5_000_000n, 7_000_000n, 1_000_000n]);
    node.run();
    cleanups.push(() => node.stop());
    const bootId = join(node.root, 'proc/sys/kernel/random/boot_id');
    mkdirSync(dirname(bootId), { recursive: true });
    writeFileSync(bootId, '0d1b2c3e-0000-4000-8000-00000000cafe\n');
    const args = ['--consumers', 'none', '--state-dir', tempDir('jg-exporter-state-')];
    let exporter = await startExporter(node.root, 'noder', { args });
    cleanups.push(() => exporter.stop());
    const port = exporter.port;
    const prometheus = await startPrometheus({ noder: port });
    for (let i = 0; ; i++) {
      if ((await scrapesOf(prometheus.url, port, 60)).filter((v) => v === 1).length >= 3) break;
      assert.ok(i < 300, 'fewer than 3 scrapes in 60 s');
      await sleep(200);
    }
    const start = Date.now() / 1000;
    await sleep(3000);
    await exporter.stop();
    const downAt = Date.now() / 1000;
    // Down for more than 10 s while the node's counters go on.
    while (Date.now() / 1000 - downAt < 10.5) await sleep(100);
    exporter = await startExporter(node.root, 'noder', { port, args });
    assert.match(exporter.stderr(), /serving/);
    await sleep(3500);
    const end = Date.now() / 1000;
    await sleep(2500); // samples after the end, for the report's interpolation
    const down = await scrapesOf(prometheus.url, port, 40);
    assert.ok(down.filter((v) => v === 0).length >= 5, `down for ≥ 5 scrapes: ${down}`);

    const watts = WATTS.node1.reduce((a, b) => a + b, 0);
    const windowS = end - start;
    const r = await runCli([
      'job-report',
      '--prometheus',
      prometheus.url,
      '--nodes',
      'noder',
      '--start',
      start.toFixed(3),
      '--end',
      end.toFixed(3),
      '--format',
      'json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as JobEnergyReport;
    const n = report.nodes[0]!;
    assert.ok(
      Math.abs(n.joules! - watts * windowS) <= watts * SCRAPE_S,
      `${n.joules} J, scripted ${watts * windowS} J over ${windowS} s`,
    );
    assert.equal(n.coverage, 100);
    assert.equal(report.complete, true, report.gaps.join('\n'));
    assert.ok(!report.gaps.some((g) => /restarted/.test(g)), report.gaps.join('\n'));
    assert.ok(
      report.gaps.some((g) => /bridged|missed/.test(g)),
      `the missed scrapes are stated: ${report.gaps}`,
    );

    // Prometheus's own increase() over the window agrees (no counter reset at the restart).
    const q = encodeURIComponent(
      `sum(increase(joulegate_package_energy_joules_total{node="noder"}[${Math.round(windowS * 1000)}ms]))`,
    );
    const resets = encodeURIComponent(`sum(resets(joulegate_package_energy_joules_total{node="noder"}[1m]))`);
    const at = `&time=${end.toFixed(3)}`;
    const value = async (query: string) => {
      const body = (await (await fetch(`${prometheus.url}/api/v1/query?query=${query}${at}`)).json()) as {
        data: { result: { value: [number, string] }[] };
      };
      return Number(body.data.result[0]?.value[1]);
    };
    assert.equal(await value(resets), 0, 'the restart is not a counter reset');
    const packageWatts = WATTS.node1[0] + WATTS.node1[1];
    const increase = await value(q);
    assert.ok(
      Math.abs(increase - packageWatts * windowS) <= packageWatts * SCRAPE_S,
      `increase() ${increase} J, scripted ${packageWatts * windowS} J`,
    );
  });

  it('says in one line when Prometheus cannot be reached or the input is wrong', async () => {
    const port = await freePort();
    // scontrol as on a node without Slurm, first on PATH: a real one on the host changes nothing.
    const slurmless = standIn('scontrol', SCONTROL_WITHOUT_SLURM);
    for (const [args, message] of [
      [
        ['--prometheus', `http://127.0.0.1:${port}`, '--nodes', 'a', '--start', '0'],
        /cannot reach Prometheus at http:\/\/127\.0\.0\.1:\d+\/: .*ECONNREFUSED/,
      ],
      [['--prometheus', 'prom:9090', '--nodes', 'a', '--start', '0'], /only http and https/],
      [
        ['--prometheus', 'http://x', '--slurm-job', '7', '--start', '0'],
        /Slurm job 7: scontrol show job failed \(scontrol: fatal: Could not establish a configuration source\)/,
      ],
      [['--prometheus', 'http://x', '--nodes', 'a', '--start', 'yesterday'], /--start "yesterday"/],
      [
        ['--prometheus', 'http://x', '--nodes', 'a', '--start', '10', '--end', '5'],
        /ends .* before it starts/,
      ],
      [['--prometheus', 'http://x', '--nodes', 'a', '--start', '0', '--format', 'xml'], /--format "xml"/],
    ] as const) {
      const r = await runCli(['job-report', ...args], {
        env: { SLURM_JOB_NODELIST: undefined, SLURM_JOB_ID: undefined, PATH: pathWith(slurmless) },
      });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });
});
