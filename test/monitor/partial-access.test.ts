import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { CLI, run, runCli } from '../helpers/cli.js';
import { raplApp } from '../helpers/rapl-app.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { daemonWithRootOnlyRapl } from '../helpers/root-only-rapl.js';
import { tempDir } from '../helpers/tmp.js';
import { asUser } from '../helpers/users.js';

const skip = needsDaemon();

// A user granted only CPU_ENERGY (the README's example) runs `joulegate monitor` against a real
// joulegated on a private bus. The node's RAPL files are root-only (Linux ≥ 5.10): CPU energy
// comes through the daemon, DRAM and psys cannot be read at all.
const { h, user } = await whenMet(skip, () => daemonWithRootOnlyRapl('jg-mon-cpuonly'));

test('granted only CPU_ENERGY: host total = CPU energy; ram and board listed as not readable', {
  skip,
}, async () => {
  const grant = await runCli(['access', '-w', '-u'], { env: h.env(), input: 'CPU_ENERGY\n' });
  assert.equal(grant.code, 0, grant.stderr);
  const out = tempDir();
  chmodSync(out, 0o777);
  // The node gains energy in every zone until the monitor is done (written by root, as the
  // kernel would), however long a loaded machine takes to start it.
  const app = raplApp(
    out,
    h.sysroot,
    [
      { zone: 'intel-rapl:0', joules: 1 },
      { zone: 'intel-rapl:1', joules: 2 },
      { zone: 'intel-rapl:0:2', joules: 0.5 },
      { zone: 'intel-rapl:2', joules: 9 },
    ],
    1000,
  );
  const writer = spawn(process.execPath, [app], { stdio: 'ignore' });
  const env = Object.entries({ ...h.env(), PATH: '/usr/bin:/bin' }).map(([k, v]) => `${k}=${v}`);
  const r = await run(
    process.execPath,
    [
      CLI,
      'monitor',
      '--sampling-period',
      '0.02',
      '--format',
      'json,text',
      '--data-out',
      out,
      '--',
      'sleep',
      '0.6',
    ],
    { prefix: [...asUser(user), 'env', ...env], cwd: out },
  );
  writer.kill();
  assert.equal(r.code, 0, r.stderr);
  const file = readdirSync(out).find((f) => f.endsWith('.json'))!;
  const report = JSON.parse(readFileSync(join(out, file), 'utf8'), (_k, v) =>
    v === null ? Number.NaN : v,
  ) as Report;
  const host = report.rounds[0]!.metrics.host;
  const cpu = host.groups.cpu!;
  assert.equal(cpu.method, 'counter');
  assert.ok(cpu.energy > 0 && cpu.energy <= 1000 * 3 + 1e-6, `cpu ${cpu.energy} J`);
  assert.equal(host.energy, cpu.energy, 'the host total is the CPU energy read through the daemon');
  assert.equal(host.power, host.energy / host.runtime);
  assert.deepEqual(
    report.sources.map((s) => [s.group, s.detail]),
    [['cpu', 'energy counters via SERVICE']],
  );
  assert.equal(host.groups.ram, undefined);
  assert.equal(host.groups.board, undefined);
  for (const [label, signal] of [
    ['RAM', 'DRAM_ENERGY'],
    ['BOARD', 'BOARD_ENERGY'],
  ]) {
    const entry = report.unavailable.find((d) => d.backend === 'monitor' && d.signal?.startsWith(signal!));
    assert.ok(entry, `${signal} is listed: ${JSON.stringify(report.unavailable)}`);
    assert.match(
      entry.reason,
      new RegExp(
        `^${label} energy not readable: .*root-only.*; ask your admin to grant ${signal} through joulegated$`,
      ),
    );
  }
  assert.match(r.stdout, /^Coverage: cpu measured; ram and board not readable$/m);
  assert.match(r.stdout, /\| +0 \| +All \| +\d+\.\d{3} m?s \| +\d+\.\d{3} J \|/);
  assert.match(
    r.stdout,
    /it has used .* kWh.* Measured energy covers what could be read: cpu measured; ram and board not readable\./,
  );
  // The root-only POWERCAP signals (20 here) are one line with a count, not one line each.
  const powercap = r.stdout.split('\n').filter((l) => /^ {2}POWERCAP\b.*root-only/.test(l));
  assert.equal(powercap.length, 1, powercap.join('\n'));
  assert.match(
    powercap[0]!,
    /^ {2}POWERCAP \(20×: .*\): \/sys\/class\/powercap\/intel-rapl…\/energy_uj: root-only/,
  );
  assert.doesNotMatch(r.stderr, /read returned NaN/);
});
