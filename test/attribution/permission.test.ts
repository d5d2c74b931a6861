import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { run } from '../helpers/cli.js';
import { needsTestUsers } from '../helpers/requirements.js';
import { copyFixture } from '../helpers/tmp.js';
import { asUser, ensureUser } from '../helpers/users.js';

const skip = needsTestUsers();

// Real permissions, real unprivileged user: another user's cgroup counter and processes are
// made unreadable (as hidepid or a restrictive cgroup delegation would), and the readers must
// say so — a failed read is never 0 s of CPU time.
const ATTRIBUTION = new URL('../../dist/attribution/index.js', import.meta.url).pathname;
const SYSROOT = new URL('../../dist/platform/sysroot.js', import.meta.url).pathname;

test('unreadable cgroup and /proc files are reported with the reason, never read as zero', {
  skip,
}, async () => {
  const root = copyFixture('attribution/node');
  chmodSync(root, 0o755);
  chmodSync(join(root, 'sys/fs/cgroup/system.slice/slurmstepd.scope/job_202/cpu.stat'), 0o600);
  chmodSync(join(root, 'proc/1011/stat'), 0o600);
  chmodSync(join(root, 'proc/503/stat'), 0o600);
  const script = `import { openConsumer, attributeInterval } from '${ATTRIBUTION}';
import { Sysroot } from '${SYSROOT}';
const sys = new Sysroot(process.argv[1]);
const jobs = [openConsumer({ kind: 'slurm-job', jobId: 101 }, sys), openConsumer({ kind: 'slurm-job', jobId: 202 }, sys)];
const tree = openConsumer({ kind: 'pid-tree', pid: 500 }, sys);
const readings = [...jobs, tree].map((c) => c.read());
const out = readings.map((r) => (r.ok ? { pids: r.processes.map((p) => p.pid).sort(), warnings: r.warnings } : r));
const shares = attributeInterval({
  device: { kind: 'package', domain: 1, index: 0 }, energyJ: 10, durationS: 1, idlePolicy: 'none', deviceUsage: 4,
  consumers: [{ id: jobs[0].id, usage: 1 }, { id: jobs[1].id, usage: NaN, reason: readings[1].reason }],
});
out.push({ unknown: shares.unknown, unattributedUj: shares.unattributedUj });
console.log(JSON.stringify(out));`;
  const user = ensureUser('joulegate-attrib');
  const r = await run('env', [process.execPath, '--input-type=module', '-e', script, root], {
    prefix: asUser(user),
  });
  assert.equal(r.code, 0, r.stderr);
  const [job101, job202, tree, shares] = JSON.parse(r.stdout);
  assert.deepEqual(job101, { pids: [1010], warnings: ['/proc/1011/stat: permission denied'] });
  const reason =
    'slurm:202 (/sys/fs/cgroup/system.slice/slurmstepd.scope/job_202): /sys/fs/cgroup/system.slice/slurmstepd.scope/job_202/cpu.stat: permission denied';
  assert.deepEqual(job202, { ok: false, reason });
  assert.deepEqual(tree, { pids: [500, 501, 502, 504], warnings: ['/proc/503/stat: permission denied'] });
  assert.deepEqual(shares, { unknown: [{ id: 'slurm:202', reason }], unattributedUj: 7_500_000 });
});
