import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { VERSION } from '../../../src/platform/version.js';
import { procStat, put } from '../../attribution/helpers.js';
import { generateTree } from '../../fixtures/generate.js';
import { runCli } from '../../helpers/cli.js';
import {
  RaplCounterFile,
  type RunningExporter,
  scrape,
  seriesValue,
  startExporter,
} from '../../helpers/exporter.js';
import { FakeGpu } from '../../helpers/fake-gpu.js';
import { needsCompiler, needsTool, requirements } from '../../helpers/requirements.js';
import { copyFixture, FIXTURES, tempDir } from '../../helpers/tmp.js';

const skip = requirements(needsCompiler(), needsTool('promtool'));

const OPENMETRICS = 'application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5';
const running: RunningExporter[] = [];
after(async () => {
  for (const e of running) await e.stop();
});
async function start(...args: Parameters<typeof startExporter>): Promise<RunningExporter> {
  const e = await startExporter(...args);
  running.push(e);
  return e;
}

/** A consumer's labels as the exporter writes them: the id, and its kind and id apart. */
function consumerLabelText(consumer: string): string {
  const [kind, id] = consumer.split(/:(.*)/s) as [string, string];
  return `consumer="${consumer}",consumer_kind="${kind}",consumer_id="${id}"`;
}

/** A generated 2-package node (cpufreq, /proc) with the intel-2s RAPL zones (package, dram, psys). */
function fullNode(): string {
  const root = tempDir('joulegate-exporter-node-');
  generateTree(root, { packages: 2, coresPerPackage: 4, threadsPerCore: 2 });
  cpSync(join(FIXTURES, 'energy/intel-2s/sys/class/powercap'), join(root, 'sys/class/powercap'), {
    recursive: true,
  });
  return root;
}

describe('joulegate exporter', { skip }, () => {
  it('serves metrics that promtool accepts, in text and OpenMetrics, with package and gpu labels', async () => {
    const perGpu = { temp_c: 55, clock_sm_mhz: 1410, clock_graphics_mhz: 1410, util_gpu: 30 };
    const gpus = new FakeGpu('nvml', {
      device_count: 2,
      ...Object.fromEntries([0, 1].flatMap((g) => Object.entries(perGpu).map(([k, v]) => [`${g}.${k}`, v]))),
    });
    const e = await start(fullNode(), 'node-a', { env: gpus.env });
    await scrape(e.url); // utilisation needs two readings
    const text = await scrape(e.url);
    assert.match(text.type, /^text\/plain; version=0\.0\.4/);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text.body, encoding: 'utf8' });
    assert.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}\n${text.body}`);
    for (const series of [
      'joulegate_package_energy_joules_total{node="node-a",package="1"}',
      'joulegate_dram_energy_joules_total{node="node-a",package="0"}',
      'joulegate_board_energy_joules_total{node="node-a"}',
      'joulegate_gpu_energy_joules_total{node="node-a",gpu="1"}',
      'joulegate_gpu_power_watts{node="node-a",gpu="0"}',
      'joulegate_cpu_frequency_hertz{node="node-a",package="0"}',
    ]) {
      assert.ok(text.body.includes(`${series} `), `${series} missing:\n${text.body}`);
    }
    assert.equal(seriesValue(text.body, 'joulegate_gpu_temperature_celsius', 'node="node-a",gpu="1"'), 55);
    // The packages' long-term limits (constraint_0_power_limit_uw 165000000 in the fixture).
    assert.equal(
      seriesValue(text.body, 'joulegate_package_power_limit_watts', 'node="node-a",package="1"'),
      165,
    );
    assert.equal(seriesValue(text.body, 'joulegate_gpu_frequency_hertz', 'node="node-a",gpu="0"'), 1.41e9);
    assert.equal(seriesValue(text.body, 'joulegate_gpu_utilization_ratio', 'node="node-a",gpu="0"'), 0.3);
    // CPU frequency in hertz: the generated policies run at 2.4 GHz + 1 MHz × first CPU.
    const pkg0 = seriesValue(text.body, 'joulegate_cpu_frequency_hertz', 'node="node-a",package="0"')!;
    assert.ok(pkg0 > 2.4e9 && pkg0 < 2.42e9, `package 0 frequency ${pkg0}`);

    const om = await scrape(e.url, OPENMETRICS);
    assert.match(om.type, /^application\/openmetrics-text; version=1\.0\.0/);
    assert.match(om.body, /^# TYPE joulegate_package_energy_joules counter$/m);
    assert.match(om.body, /^joulegate_package_energy_joules_total\{node="node-a",package="0"\} /m);
    assert.ok(om.body.endsWith('# EOF\n'), 'OpenMetrics ends with # EOF');

    // Text after OpenMetrics: the same names as before (Prometheus asks for OpenMetrics, a
    // curl or Telegraf beside it for text), and promtool still accepts it.
    const again = await scrape(e.url);
    const check2 = spawnSync('promtool', ['check', 'metrics'], { input: again.body, encoding: 'utf8' });
    assert.equal(
      check2.status,
      0,
      `promtool after OpenMetrics: ${check2.stdout}${check2.stderr}\n${again.body}`,
    );
    const typeLines = (body: string) => body.split('\n').filter((l) => l.startsWith('# TYPE '));
    assert.deepEqual(typeLines(again.body), typeLines(text.body));
    assert.match(again.body, /^# TYPE joulegate_package_energy_joules_total counter$/m);
    const om2 = await scrape(e.url, OPENMETRICS);
    assert.deepEqual(typeLines(om2.body), typeLines(om.body), 'OpenMetrics names stay too');
  });

  it('gzips a scrape that asks for it, and serves its own process metrics', async () => {
    const e = await start(copyFixture('energy/amd-epyc'), 'n1', { args: ['--consumers', 'none'] });
    const get = (headers: Record<string, string>) =>
      new Promise<{ encoding: string | undefined; vary: string | undefined; body: Buffer }>(
        (resolve, reject) => {
          httpGet(e.url, { headers }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({
                encoding: res.headers['content-encoding'],
                vary: res.headers.vary,
                body: Buffer.concat(chunks),
              }),
            );
          }).on('error', reject);
        },
      );
    const zipped = await get({ 'Accept-Encoding': 'gzip' });
    assert.equal(zipped.encoding, 'gzip');
    assert.equal(zipped.vary, 'Accept-Encoding');
    const text = gunzipSync(zipped.body).toString('utf8');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}`);
    assert.match(text, /^process_resident_memory_bytes \d/m);
    assert.match(text, /^process_cpu_seconds_total \d/m);
    const plain = await get({});
    assert.equal(plain.encoding, undefined);
    assert.match(plain.body.toString('utf8'), /^# HELP /);
    assert.equal((await get({ 'Accept-Encoding': 'gzip;q=0, identity' })).encoding, undefined);
  });

  it('continues its counters across a restart on the same boot, a wrap while down included', async () => {
    const root = copyFixture('energy/amd-epyc');
    const bootIdFile = join(root, 'proc/sys/kernel/random/boot_id');
    mkdirSync(dirname(bootIdFile), { recursive: true });
    writeFileSync(bootIdFile, '5c1f0e84-0000-4000-8000-000000000001\n');
    const stateDir = tempDir('jg-exporter-state-');
    const args = ['--consumers', 'none', '--state-dir', stateDir];
    const zone = new RaplCounterFile(root, 'intel-rapl:0');
    const range = zone.modulus;
    const value = async (e: RunningExporter) =>
      seriesValue(
        (await scrape(e.url)).body,
        'joulegate_package_energy_joules_total',
        'node="n1",package="0"',
      );
    zone.set(range - 3_000_000n);
    let e = await start(root, 'n1', { args });
    assert.equal(await value(e), 0);
    zone.set(range - 1_000_000n);
    assert.equal(await value(e), 2);
    await e.stop();
    assert.equal(statSync(join(stateDir, 'exporter-counters.json')).mode & 0o777, 0o600);

    zone.set(range + 1_500_000n); // while no exporter runs: 1 J up to the wrap, 1.5 J after it
    e = await start(root, 'n1', { args });
    const resumed = await value(e);
    assert.ok(Math.abs(resumed! - 4.5) < 1e-6, `2 J before, 2.5 J while down: got ${resumed}`);
    assert.match(
      e.stderr(),
      /package 0: continued from the saved total, with the energy used while no exporter ran/,
    );
    zone.set(range + 2_500_000n);
    assert.ok(Math.abs((await value(e))! - 5.5) < 1e-6, 'and on from there');
    await e.stop();

    // Another boot: the saved totals describe counters that no longer exist, so start over.
    writeFileSync(bootIdFile, '5c1f0e84-0000-4000-8000-000000000002\n');
    e = await start(root, 'n1', { args });
    assert.equal(await value(e), 0);
    assert.match(e.stderr(), /exporter-counters\.json is from an earlier boot: counters start from 0/);
    await e.stop();

    // Another node's file, or a torn or foreign one, is never trusted: one line, then from 0.
    e = await start(root, 'n2', { args });
    assert.match(e.stderr(), /ignored: it is node "n1"'s; counters start from 0/);
    await e.stop();
    writeFileSync(join(stateDir, 'exporter-counters.json'), '{"format":1,"node":"n1",');
    e = await start(root, 'n1', { args });
    assert.equal(await value(e), 0);
    assert.match(e.stderr(), /ignored, not a counter state \(not JSON\); counters start from 0/);
    zone.close();
  });

  it('publishes energy as a counter from 0 that follows the RAPL counter across its wrap', async () => {
    const root = copyFixture('energy/amd-epyc');
    const zone = new RaplCounterFile(root, 'intel-rapl:0');
    const range = zone.modulus;
    zone.set(range - 1_500_000n); // 1.5 J below the wrap
    const e = await start(root, 'n1', { args: ['--consumers', 'none'] });
    const value = async () =>
      seriesValue(
        (await scrape(e.url)).body,
        'joulegate_package_energy_joules_total',
        'node="n1",package="0"',
      );
    assert.equal(await value(), 0);
    zone.set(range - 500_000n);
    assert.equal(await value(), 1);
    zone.set(range + 2_250_000n); // wrapped: 0.5 J to the top, 2.25 J after it
    assert.equal(await value(), 3.75);
    assert.equal(await value(), 3.75, 'no energy without counter change');
    zone.close();
  });

  it('leaves out a series whose read fails instead of publishing 0, and counts on after it', async () => {
    const root = copyFixture('energy/amd-epyc');
    const zone = join(root, 'sys/class/powercap/intel-rapl:1/energy_uj');
    writeFileSync(zone, '1000000\n');
    const e = await start(root, 'n1', { args: ['--consumers', 'none'] });
    await scrape(e.url);
    writeFileSync(zone, 'garbled\n');
    const bad = (await scrape(e.url)).body;
    assert.equal(
      seriesValue(bad, 'joulegate_package_energy_joules_total', 'node="n1",package="1"'),
      undefined,
    );
    assert.notEqual(
      seriesValue(bad, 'joulegate_package_energy_joules_total', 'node="n1",package="0"'),
      undefined,
    );
    // Its power (derived from the same counter) is left out too.
    assert.equal(seriesValue(bad, 'joulegate_package_power_watts', 'node="n1",package="1"'), undefined);
    assert.equal(seriesValue(bad, 'joulegate_exporter_read_failures', 'node="n1"'), 2);
    writeFileSync(zone, '3000000\n');
    const good = (await scrape(e.url)).body;
    assert.equal(seriesValue(good, 'joulegate_package_energy_joules_total', 'node="n1",package="1"'), 2);
    assert.match(e.stderr(), /joulegate_package_energy_joules_total: .*garbled/);
  });

  it('splits each scrape interval of energy among the Slurm jobs on the node by their CPU time', async () => {
    // Package 0 = CPUs 0-1, package 1 = CPUs 2-3; job 101 may run on 0-1, job 202 on 1-3.
    const root = copyFixture('attribution/node');
    const SCOPE = 'sys/fs/cgroup/system.slice/slurmstepd.scope';
    const pkg0 = new RaplCounterFile(root, 'intel-rapl:0');
    const pkg1 = new RaplCounterFile(root, 'intel-rapl:1');
    const dram = new RaplCounterFile(root, 'intel-rapl:0:0');
    pkg0.set(100_000_000n);
    pkg1.set(200_000_000n);
    dram.set(50_000_000n);
    const e = await start(root, 'n1', { args: ['--consumers', 'slurm'] });
    await scrape(e.url);
    // One interval: job 101 runs 0.4 s and job 202 0.6 s of CPU time, seen by no process of
    // theirs, so each is spread over its cpuset: 101 → 0.2 s on CPUs 0 and 1; 202 → 0.2 s on
    // CPUs 1, 2, 3. /proc/stat's busy time equals theirs (no other work). Package 0: 101 has
    // 0.4 of 0.6 s, 202 0.2 s; package 1: all 202's.
    put(root, `${SCOPE}/job_101/cpu.stat`, 'usage_usec 5400000\nuser_usec 5400000\nsystem_usec 0\n');
    put(root, `${SCOPE}/job_202/cpu.stat`, 'usage_usec 3600000\nuser_usec 3600000\nsystem_usec 0\n');
    put(
      root,
      'proc/stat',
      procStat([
        [1020, 5000],
        [1040, 5000],
        [1020, 5000],
        [1020, 5000],
      ]),
    );
    pkg0.set(130_000_000n); // +30 J
    pkg1.set(210_000_000n); // +10 J
    dram.set(56_000_000n); // +6 J
    const body = (await scrape(e.url)).body;
    const energy = (consumer: string, device: string) =>
      seriesValue(
        body,
        'joulegate_consumer_energy_joules_total',
        `node="n1",${consumerLabelText(consumer)},device="${device}"`,
      );
    assert.equal(energy('slurm:101', 'package'), 20);
    assert.equal(energy('slurm:202', 'package'), 20); // 10 J on package 0 + 10 J on package 1
    assert.equal(energy('slurm:101', 'dram'), 4);
    assert.equal(energy('slurm:202', 'dram'), 2);
    assert.equal(
      seriesValue(body, 'joulegate_unattributed_energy_joules_total', 'node="n1",device="package"'),
      0,
    );
    // Job 404 (a second slurmd's scope) is tracked too; it used no CPU, so it has no energy yet.
    assert.equal(seriesValue(body, 'joulegate_consumers_tracked', 'node="n1"'), 3);
    assert.equal(energy('slurm:404', 'package'), undefined);
    for (const z of [pkg0, pkg1, dram]) z.close();
  });

  it("splits GPU energy by NVML per-process utilisation of the jobs' processes", async () => {
    // Job 101 holds pid 1011, job 202 pid 2021; pid 7777 belongs to neither.
    const gpus = new FakeGpu('nvml', {
      device_count: 2,
      '0.power_mw': 200000,
      '0.proc_util': '1011:60,2021:20,7777:20',
    });
    const e = await start(copyFixture('attribution/node'), 'n1', {
      args: ['--consumers', 'slurm'],
      env: gpus.env,
    });
    await scrape(e.url);
    await new Promise((r) => setTimeout(r, 200));
    const body = (await scrape(e.url)).body;
    const gpu0 = seriesValue(body, 'joulegate_gpu_energy_joules_total', 'node="n1",gpu="0"')!;
    const gpu1 = seriesValue(body, 'joulegate_gpu_energy_joules_total', 'node="n1",gpu="1"')!;
    assert.ok(gpu0 > 0 && gpu1 > 0, body);
    const share = (consumer: string) =>
      seriesValue(
        body,
        'joulegate_consumer_energy_joules_total',
        `node="n1",${consumerLabelText(consumer)},device="gpu"`,
      )!;
    // Within 1 µJ of the exact fractions of GPU 0; GPU 1 had no process sample: nobody's.
    assert.ok(Math.abs(share('slurm:101') - gpu0 * 0.6) <= 1e-6, `${share('slurm:101')} of ${gpu0}`);
    assert.ok(Math.abs(share('slurm:202') - gpu0 * 0.2) <= 1e-6, `${share('slurm:202')} of ${gpu0}`);
    const unattributed = seriesValue(
      body,
      'joulegate_unattributed_energy_joules_total',
      'node="n1",device="gpu"',
    )!;
    assert.ok(Math.abs(unattributed - (gpu0 * 0.2 + gpu1)) <= 2e-6, `${unattributed}`);
  });

  it('drops consumers beyond --max-consumers and says how many', async () => {
    const e = await start(copyFixture('attribution/node'), 'n1', { args: ['--max-consumers', '1'] });
    await scrape(e.url);
    const body = (await scrape(e.url)).body;
    assert.equal(seriesValue(body, 'joulegate_consumers_tracked', 'node="n1"'), 1);
    assert.equal(seriesValue(body, 'joulegate_consumers_untracked', 'node="n1"'), 2); // jobs 101, 202, 404
  });

  it('a node without RAPL: which sources are missing and why, as metrics and once in the log', async () => {
    const vm = join(FIXTURES, 'vm-1s4c');
    const e = await start(vm, 'vm');
    const first = (await scrape(e.url)).body;
    const body = (await scrape(e.url)).body;
    const check = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' });
    assert.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}\n${body}`);
    const available = (source: string) =>
      seriesValue(body, 'joulegate_source_available', `node="vm",source="${source}"`);
    assert.deepEqual(['POWERCAP', 'MSR', 'NVML', 'PROCFS', 'TIME'].map(available), [0, 0, 0, 1, 1]);
    const noRapl = `no RAPL zones under ${vm}/sys/class/powercap`;
    assert.equal(
      seriesValue(
        body,
        'joulegate_source_unavailable_info',
        `node="vm",source="POWERCAP",reason="${noRapl}"`,
      ),
      1,
    );
    assert.ok(!body.includes('source="PROCFS",reason='), 'a loaded source has no reason series');
    assert.equal(
      seriesValue(
        body,
        'joulegate_build_info',
        `node="vm",version="${VERSION}",node_version="${process.version}"`,
      ),
      1,
    );
    assert.ok(!/^joulegate_package_energy_joules_total\{/m.test(body), body);
    // The first scrape has the CPU utilisation rate pending, not failed.
    assert.equal(seriesValue(first, 'joulegate_exporter_read_failures', 'node="vm"'), 0);
    const log = e.stderr();
    const once = (line: string) => assert.equal(log.split(line).length - 1, 1, `${line} once in:\n${log}`);
    once(`joulegate exporter: source POWERCAP not available: ${noRapl}\n`);
    once(
      'joulegate exporter: not exported, no signal for them on this node: joulegate_package_energy_joules_total (CPU_ENERGY), ',
    );
    once(
      'joulegate exporter: attribution: no consumers: no cgroup hierarchy at /sys/fs/cgroup (v2, or v1 with cpuacct): consumers are found as cgroups\n',
    );
  });

  it('first scrape of a healthy node: no read failures; rates (power) appear from the second', async () => {
    const e = await start(fullNode(), 'n1', { args: ['--consumers', 'none'] });
    const first = (await scrape(e.url)).body;
    assert.equal(seriesValue(first, 'joulegate_exporter_read_failures', 'node="n1"'), 0, first);
    assert.equal(seriesValue(first, 'joulegate_package_energy_joules_total', 'node="n1",package="0"'), 0);
    assert.equal(seriesValue(first, 'joulegate_package_power_watts', 'node="n1",package="0"'), undefined);
    const second = (await scrape(e.url)).body;
    assert.equal(seriesValue(second, 'joulegate_package_power_watts', 'node="n1",package="0"'), 0);
    assert.equal(seriesValue(second, 'joulegate_source_available', 'node="n1",source="POWERCAP"'), 1);
    assert.ok(!second.includes('joulegate_source_unavailable_info{node="n1",source="POWERCAP"'), second);
  });

  it('refuses bad options with one line', async () => {
    for (const [args, message] of [
      [['--listen', 'nowhere'], /--listen "nowhere": expected HOST:PORT/],
      [['--consumers', 'pods'], /--consumers: "pods" is not one of slurm, users, system, none/],
      [['--consumer-expiry', '0'], /--consumer-expiry "0": expected a whole number/],
    ] as const) {
      const r = await runCli(['exporter', ...args], { env: { JOULEGATE_SYSROOT: FIXTURES } });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });

  it('takes the listen address from JOULEGATE_EXPORTER_LISTEN when --listen is not given', async () => {
    const r = await runCli(['exporter'], {
      env: { JOULEGATE_SYSROOT: FIXTURES, JOULEGATE_EXPORTER_LISTEN: 'from-env' },
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /"from-env": expected HOST:PORT/);
  });
});
