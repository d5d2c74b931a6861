import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { AttributionReport } from '../../src/attribution/summary.js';
import type { Report } from '../../src/monitor/model/report-model.js';
import { CLI, run, runCli } from '../helpers/cli.js';
import { raplApp } from '../helpers/rapl-app.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { daemonWithRootOnlyRapl } from '../helpers/root-only-rapl.js';
import { tempDir } from '../helpers/tmp.js';
import { asUser } from '../helpers/users.js';
import { waitFor } from '../service/harness.js';

const skip = needsDaemon();

// Issue 16 item 5: an unprivileged user attributes energy to their own processes. The node's RAPL
// files are root-only; a real joulegated on a private bus serves CPU_ENERGY (granted to the
// user), while /proc and /proc/stat of this machine are read directly by the user's monitor.
const { h, user } = await whenMet(skip, () => daemonWithRootOnlyRapl('jg-attr-user'));

const started: ChildProcess[] = [];
after(() => {
  for (const c of started) c.kill('SIGKILL');
});

test('monitor --attribute as an unprivileged user: energy through the daemon, shares from /proc', {
  skip,
}, async () => {
  const grant = await runCli(['access', '-w', '-u'], { env: h.env(), input: 'CPU_ENERGY\n' });
  assert.equal(grant.code, 0, grant.stderr);
  const out = tempDir();
  chmodSync(out, 0o777);
  // The user's own sleeping process, named as a second consumer.
  const sleeper = spawn(asUser(user)[0]!, [...asUser(user).slice(1), 'sleep', '120'], { stdio: 'ignore' });
  started.push(sleeper);
  const writer = spawn(
    process.execPath,
    [raplApp(out, h.sysroot, [{ zone: 'intel-rapl:0', joules: 0.2 }], 3000, 10)],
    { stdio: 'ignore' },
  );
  started.push(writer);
  // The monitor reads this machine's /proc (no sysroot); only the daemon sees the fixture RAPL.
  const env: Record<string, string> = { ...h.env(), PATH: '/usr/bin:/bin' };
  delete env.JOULEGATE_SYSROOT;
  // setpriv's own pid is the sleeper's until it execs: wait for `sleep` to be the user's process.
  assert.ok(
    await waitFor(() => readFileSync(`/proc/${sleeper.pid}/comm`, 'utf8') === 'sleep\n', 30_000),
    'setpriv did not exec sleep',
  );
  const r = await run(
    process.execPath,
    [
      CLI,
      'monitor',
      '--attribute',
      '--pid',
      String(sleeper.pid),
      '--sampling-period',
      '0.1',
      '--format',
      'json',
      '--data-out',
      out,
      '--',
      'sh',
      '-c',
      'sh -c "while :; do :; done" & p=$!; sleep 1.5; kill $p; wait $p; exit 0',
    ],
    {
      prefix: [...asUser(user), 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`)],
      cwd: out,
      timeoutMs: 120_000,
    },
  );
  writer.kill();
  assert.equal(r.code, 0, r.stderr);
  const file = readdirSync(out).find((f) => /\d\.json$/.test(f))!;
  const report = JSON.parse(readFileSync(join(out, file), 'utf8'), (_k, v) =>
    v === null ? Number.NaN : v,
  ) as Report;
  assert.deepEqual(
    report.sources.map((s) => [s.group, s.detail]),
    [['cpu', 'energy counters via SERVICE']],
  );
  const a = report.attribution as AttributionReport;
  assert.deepEqual(a.notes, [], 'every consumer was readable by its owner');
  const cpu = a.groups.find((g) => g.group === 'cpu')!;
  assert.equal(cpu.method, 'counter');
  assert.ok(cpu.measured > 0, `${cpu.measured} J through the daemon`);
  assert.ok(Math.abs(cpu.measured - report.rounds[0]!.metrics.host.groups.cpu!.energy) < 1e-5);
  assert.ok(cpu.app > 0, `app ${cpu.app} J`);
  assert.ok(
    cpu.app / (cpu.app + cpu.consumers[0]!) >= 0.9,
    `app ${cpu.app} J, sleeper ${cpu.consumers[0]} J`,
  );
  const parts = cpu.app + cpu.others + cpu.unattributed + cpu.idle;
  assert.ok(Math.abs(parts - cpu.measured) < 1e-9 * Math.max(1, cpu.measured));
});
