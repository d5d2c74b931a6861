import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { CLI, run, runCli } from '../helpers/cli.js';
import { paddedStat, tickerSource } from '../helpers/proc-stat.js';
import { needsAdmin } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';
import { waitFor } from '../service/harness.js';

const admin = needsAdmin();

const INDEX = new URL('../../dist/index.js', import.meta.url).pathname;
const RAPL = 'sys/class/powercap';

function files(dir: string, re: RegExp): string[] {
  return readdirSync(dir)
    .filter((f) => re.test(f))
    .map((f) => join(dir, f));
}
const readJson = (path: string) =>
  JSON.parse(readFileSync(path, 'utf8'), (_k, v) => (v === null ? Number.NaN : v)) as Report;

describe('joulegate monitor on a fixture sysroot', () => {
  it('reports the exact counter energy a helper process adds, across a counter wrap', async () => {
    const root = copyFixture('energy/amd-epyc');
    const out = tempDir();
    const range = Number(readFileSync(join(root, RAPL, 'intel-rapl:0/max_energy_range_uj'), 'utf8'));
    const z0 = join(root, RAPL, 'intel-rapl:0/energy_uj');
    const z1 = join(root, RAPL, 'intel-rapl:1/energy_uj');
    // Package 0 starts 0.5 J below its wrap and ends 1.5 J after it (2 J); package 1 gains 3 J.
    writeFileSync(z0, String(range - 500_000));
    writeFileSync(z1, '1000000');
    const helper = join(out, 'advance.mjs');
    writeFileSync(
      helper,
      `import { writeFileSync } from 'node:fs';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let k = 1; k <= 10; k++) {
  await sleep(40);
  writeFileSync(${JSON.stringify(z0)}, String((${range} - 500000 + k * 200000) % (${range} + 1)));
  writeFileSync(${JSON.stringify(z1)}, String(1000000 + k * 300000));
}
`,
    );
    const r = await runCli(
      [
        'monitor',
        '--sampling-period',
        '0.02',
        '--format',
        'json,text',
        '--data-out',
        out,
        '--app-name',
        'rapl',
        '--',
        process.execPath,
        helper,
      ],
      { env: { JOULEGATE_SYSROOT: root }, cwd: out },
    );
    assert.equal(r.code, 0, r.stderr);
    const report = readJson(files(out, /^rapl_.*\.json$/)[0]!);
    const cpu = report.rounds[0]!.metrics.host.groups.cpu!;
    assert.equal(cpu.method, 'counter');
    assert.ok(Math.abs(cpu.energy - 5) < 1e-5, `cpu energy ${cpu.energy} J, expected 5 J`);
    assert.ok(Math.abs(report.rounds[0]!.metrics.host.energy - 5) < 1e-5);
    assert.deepEqual(
      report.sources.map((s) => [s.group, s.method]),
      [['cpu', 'counter']],
    );
    assert.match(r.stdout, /\| +0 \| +All \|.* 5\.000 J \|/);
    assert.match(r.stdout, /cpu: counter, energy counters via POWERCAP/);
    // This tree has no /proc/stat: no utilisation from the host's own CPUs instead.
    assert.equal(cpu.util, undefined);
    assert.ok(
      report.unavailable.some((d) => /^CPU utilisation unavailable: .*proc\/stat not found/.test(d.reason)),
      JSON.stringify(report.unavailable),
    );
    assert.match(r.stdout, /CPU utilisation unavailable: /);
  });
});

describe('CPU utilisation comes from PROCFS under the sysroot', () => {
  /** `joulegate monitor` of `command` on the fixture tree `root`: its result and JSON report. */
  async function monitorOn(root: string, period: string, command: string[]) {
    const out = tempDir();
    const args = ['--sampling-period', period, '--format', 'json,text', '--data-out', out, '--app-name', 'u'];
    const r = await runCli(['monitor', ...args, '--', ...command], {
      env: { JOULEGATE_SYSROOT: root },
      cwd: out,
    });
    assert.equal(r.code, 0, r.stderr);
    return { r, report: readJson(files(out, /^u_.*\.json$/)[0]!) };
  }

  it("is the sysroot's /proc/stat busy fraction, exactly, with no failure warnings", async () => {
    const root = copyFixture('vm-1s4c');
    // Every 30 ms each CPU gains 3 busy (user) and 7 idle ticks: 30 % busy, whatever this host does.
    const app = join(tempDir(), 'load.mjs');
    writeFileSync(
      app,
      `${tickerSource(paddedStat(root), 3, 7)}
startTicking(30);
await new Promise((r) => setTimeout(r, 360));
stopTicking();
`,
    );
    const { r, report } = await monitorOn(root, '0.01', [process.execPath, app]);
    assert.doesNotMatch(r.stderr, /read failed/);
    const util = report.series.filter((s) => s.kind === 'util');
    assert.deepEqual(
      util.map((s) => [s.group, s.signal, s.backend]),
      [['cpu', 'CPU_UTILIZATION', 'PROCFS']],
    );
    const values = report.rounds[0]!.values[report.series.indexOf(util[0]!)]!;
    // NaN until the first tick (no value yet), then 30 % at every sample, also between ticks.
    const first = values.findIndex(Number.isFinite);
    assert.ok(first > 0);
    assert.deepEqual(
      values.slice(first),
      values.slice(first).map(() => 30),
    );
    const cpuUtil = report.rounds[0]!.metrics.host.groups.cpu!.util!;
    assert.ok(Math.abs(cpuUtil - 30) < 1e-9, `CPU utilisation ${cpuUtil} %`);
    assert.ok(
      !report.unavailable.some((d) => /utilisation unavailable/.test(d.reason)),
      JSON.stringify(report.unavailable),
    );
  });

  it('unreadable /proc/stat: utilisation unavailable with the reason, no value made up', async () => {
    const root = copyFixture('vm-1s4c');
    writeFileSync(join(root, 'proc/stat'), 'cpu  1 2 oops 4\n');
    const { r, report } = await monitorOn(root, '0.02', ['sleep', '0.1']);
    assert.match(r.stdout, /CPU utilisation not readable: \/proc\/stat: bad number/);
    const i = report.series.findIndex((s) => s.kind === 'util' && s.group === 'cpu');
    assert.ok(i >= 0);
    assert.ok(report.rounds[0]!.values[i]!.every(Number.isNaN), 'every sample is a gap');
    assert.ok(Number.isNaN(report.rounds[0]!.metrics.host.groups.cpu!.util!));
    assert.ok(
      report.unavailable.some(
        (d) =>
          d.signal === report.series[i]!.id &&
          /^CPU utilisation not readable: \/proc\/stat: bad number/.test(d.reason),
      ),
      JSON.stringify(report.unavailable),
    );
  });
});

describe('exit status and interrupts', () => {
  it('passes the app exit status on, 128+signal for a killed app, 127 for a missing command', {
    skip: admin,
  }, async () => {
    const out = tempDir();
    const opts = { cwd: out };
    const three = await runCli(
      ['monitor', '--format', 'json', '--data-out', out, '--', 'sh', '-c', 'exit 3'],
      opts,
    );
    assert.equal(three.code, 3);
    const killed = await runCli(
      ['monitor', '--format', 'json', '--data-out', out, '--', 'sh', '-c', 'kill -9 $$'],
      opts,
    );
    assert.equal(killed.code, 137);
    const failed = files(out, /^failed_sh_.*\.json$/).map(readJson);
    assert.equal(failed.length, 2);
    assert.ok(failed.some((f) => f.failure === 'app exited with status 3'));
    assert.ok(failed.some((f) => f.failure === 'app killed by SIGKILL'));
    const missing = await runCli(['monitor', '--', 'no-such-command-xyz'], opts);
    assert.equal(missing.code, 127);
    assert.match(missing.stderr, /^Error: cannot run no-such-command-xyz: command not found\n$/);
  });

  it('keeps the app status and writes the report when stdout is closed early (| head)', async () => {
    const out = tempDir();
    const child = spawn(
      process.execPath,
      [CLI, 'monitor', '--data-out', out, '--', 'sh', '-c', 'sleep 0.2; exit 5'],
      { cwd: out, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(code, 5, stderr);
    assert.doesNotMatch(stderr, /EPIPE|node:events|\n\s+at /);
    assert.equal(files(out, /^failed_sh_.*\.txt$/).length, 1);
  });

  it('forwards SIGINT to the app and still writes a partial report marked failed', async () => {
    const out = tempDir();
    const child = spawn(
      process.execPath,
      [
        CLI,
        'monitor',
        '--sampling-period',
        '0.05',
        '--format',
        'json',
        '--data-out',
        out,
        '--',
        'sleep',
        '30',
      ],
      // A session without a terminal: the SIGINT reaches the monitor alone, whatever runs the tests.
      { cwd: out, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    // Interrupt once the app runs (sleep shows up as the monitor's child).
    const appRuns = () => {
      const kids = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
      return kids !== '' && readFileSync(`/proc/${kids.split(' ')[0]}/comm`, 'utf8').startsWith('sleep');
    };
    assert.ok(await waitFor(appRuns, 30_000), `the app did not start: ${stderr}`);
    child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => child.on('close', r));
    assert.equal(code, 130, stderr);
    const [path] = files(out, /^failed_sleep_.*\.json$/);
    assert.ok(path, `no partial report: ${stderr}`);
    const report = readJson(path!);
    assert.equal(report.failed, true);
    assert.equal(report.failure, 'interrupted by SIGINT');
    assert.ok(report.rounds[0]!.times.length >= 2, 'samples at start and at exit');
  });
});

describe('output formats', () => {
  it('writes every format; json and hdf5 read back to the same report', async () => {
    const out = tempDir();
    const r = await runCli(
      [
        'monitor',
        '--sampling-period',
        '0.05',
        '--rounds',
        '2',
        '--format',
        'text,json,csv,bench,hdf5,html',
        '--data-out',
        out,
        '--app-name',
        'fmt',
        '--run-id',
        'r1',
        '--',
        'sleep',
        '0.3',
      ],
      { cwd: out },
    );
    assert.equal(r.code, 0, r.stderr);
    const json = join(out, 'fmt_r1.json');
    const original = readFileSync(json, 'utf8');
    const report = readJson(json);
    assert.equal(report.rounds.length, 2);
    assert.ok(Number.isFinite(report.summary.runtime!.std));

    // json → import → json is byte-identical (new file name: nothing is overwritten)
    const e1 = await runCli(['export', json, 'json']);
    assert.equal(e1.code, 0, e1.stderr);
    assert.equal(e1.stdout.trim(), join(out, 'fmt_r1_1.json'));
    assert.equal(readFileSync(e1.stdout.trim(), 'utf8'), original);

    // hdf5: perun's tree, raw data readable with h5wasm, and export back to the same json
    const h5 = await import('h5wasm/node');
    await h5.ready;
    const f = new h5.File(join(out, 'fmt_r1.hdf5'), 'r');
    try {
      const base = 'fmt/nodes/r1/nodes/0/nodes';
      const host = (f.get(base) as InstanceType<typeof h5.Group>).keys()[0]!;
      const typeOf = (path: string) =>
        Number((f.get(path) as InstanceType<typeof h5.Group>).attrs.type!.value);
      assert.equal(typeOf('fmt'), 1);
      assert.equal(typeOf('fmt/nodes/r1'), 2);
      assert.equal(typeOf('fmt/nodes/r1/nodes/0'), 3);
      assert.equal(typeOf(`${base}/${host}`), 4);
      const series = report.series[0]!;
      const raw = f.get(
        `${base}/${host}/nodes/${series.group}/nodes/${series.id}/raw_data/timesteps`,
      ) as InstanceType<typeof h5.Dataset>;
      assert.deepEqual(Array.from(raw.value as Float64Array), report.rounds[0]!.times);
    } finally {
      f.close();
    }
    const e2 = await runCli(['export', join(out, 'fmt_r1.hdf5'), 'json']);
    assert.equal(e2.code, 0, e2.stderr);
    assert.equal(readFileSync(e2.stdout.trim(), 'utf8'), original);

    const csv = readFileSync(join(out, 'fmt_r1.csv'), 'utf8').trim().split('\n');
    assert.equal(csv[0], 'run_id,round,hostname,device_group,sensor,kind,unit,timestep,value');
    const samples = report.rounds.reduce((a, round) => a + round.times.length * report.series.length, 0);
    assert.equal(csv.length - 1, samples);
    const bench = JSON.parse(readFileSync(join(out, 'fmt_r1.bench.json'), 'utf8'));
    assert.equal(bench[0].name, 'fmt - RUNTIME');
    assert.ok(bench[0].range !== undefined, 'two rounds give a range');
    const html = readFileSync(join(out, 'fmt_r1.html'), 'utf8');
    assert.match(html, /<svg/);
    assert.match(html, /JOULEGATE REPORT/);
    const text = readFileSync(join(out, 'fmt_r1.txt'), 'utf8');
    assert.match(text, /\| +1 \| +All \|/);
    assert.match(text, /Across 2 rounds \(mean ± std\): runtime \d+\.\d\d ± \d+\.\d\d s/);
    const bad = await runCli(['export', join(out, 'fmt_r1.csv'), 'json']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: .*can only import \.json or \.hdf5 reports\n$/);
  });
});

describe('regions API', () => {
  const app = (dir: string) => {
    const path = join(dir, 'app.mjs');
    writeFileSync(
      path,
      `import { measure, region, regionReport } from ${JSON.stringify(INDEX)};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const outer = region('outer');
await measure('step', () => { const end = Date.now() + 50; while (Date.now() < end); });
await measure('step', async () => { await sleep(80); await measure('inner', () => sleep(30)); });
outer.end();
const rep = await regionReport();
console.log(JSON.stringify(rep === undefined ? null : rep.map((r) => [r.name, r.callsPerRound, r.runtime.mean])));
`,
    );
    return path;
  };

  it('under monitor: nested and repeated regions reach the report over the channel', async () => {
    const out = tempDir();
    const r = await runCli(
      [
        'monitor',
        '--sampling-period',
        '0.02',
        '--format',
        'json',
        '--data-out',
        out,
        '--app-name',
        'reg',
        '--',
        process.execPath,
        app(out),
      ],
      { cwd: out },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^null$/m, 'regionReport() is undefined under the monitor');
    const report = readJson(files(out, /^reg_.*\.json$/)[0]!);
    const calls = report.rounds[0]!.metrics.regions;
    assert.deepEqual(
      calls.map((c) => [c.name, c.depth]),
      [
        ['outer', 0],
        ['step', 1],
        ['step', 1],
        ['inner', 2],
      ],
    );
    const [outer, s1, s2, inner] = calls;
    assert.ok(outer!.start <= s1!.start && s2!.stop <= outer!.stop);
    assert.ok(s2!.start <= inner!.start && inner!.stop <= s2!.stop);
    assert.ok(inner!.runtime >= 0.029, `inner ${inner!.runtime}`);
    assert.ok(
      outer!.start >= 0 && outer!.stop <= report.rounds[0]!.metrics.host.runtime,
      'one clock for regions and app',
    );
    assert.equal(report.regions.find((s) => s.name === 'step')!.callsPerRound, 2);
  });

  it('standalone: samples itself and returns region statistics', async () => {
    const dir = tempDir();
    const res = await run(process.execPath, [app(dir)], {
      cwd: dir,
      env: { JOULEGATE_REGION_FD: undefined },
    });
    assert.equal(res.code, 0, res.stderr);
    const rows = JSON.parse(res.stdout) as [string, number, number][];
    assert.deepEqual(
      rows.map(([n, c]) => [n, c]),
      [
        ['outer', 1],
        ['step', 2],
        ['inner', 1],
      ],
    );
    assert.ok(rows[2]![2] >= 0.029);
  });
});

describe('sensors and metadata', () => {
  it('sensors lists what the monitor samples and what is missing with the reason', async () => {
    const root = copyFixture('energy/amd-epyc');
    const r = await runCli(['sensors', '--json'], { env: { JOULEGATE_SYSROOT: root } });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      sensors: { sensor: string; device: string; unit: string }[];
      unavailable: { backend: string; reason: string }[];
    };
    assert.ok(
      out.sensors.some((s) => s.sensor === 'CPU_ENERGY-package-1' && s.device === 'cpu' && s.unit === 'J'),
    );
    assert.ok(out.unavailable.length > 0 && out.unavailable.every((d) => d.reason.length > 0));
    const all = await runCli(['sensors', '--all'], { env: { JOULEGATE_SYSROOT: root } });
    assert.match(all.stdout, /\| +Sensor \| +Source \| +Device \| +Unit \|/);
    assert.match(all.stdout, /Not available:/);
  });

  it('metadata prints host facts and backend metadata as JSON', async () => {
    const r = await runCli(['metadata']);
    assert.equal(r.code, 0, r.stderr);
    const meta = JSON.parse(r.stdout) as Record<string, Record<string, unknown>>;
    const host = Object.values(meta)[0]!;
    for (const key of [
      'hostname',
      'kernel',
      'processor',
      'core_count',
      'joulegate_version',
      'node',
      'backends',
    ]) {
      assert.ok(key in host, `missing ${key}`);
    }
    assert.equal(typeof host.backends, 'object');
  });
});
