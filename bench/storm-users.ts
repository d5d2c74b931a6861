/**
 * The batch-start storm of issue 22: U users each start S batch servers at once (one client
 * process per start, as the users themselves), on a daemon with its default limits, admission
 * and start deadline, the clients with D-Bus's default 25 s reply timeout. Prints JSON: how each
 * start ended (started, refused over a limit, given up at the deadline, or timed out in the
 * client), StartBatch p50/max, each user's first start, and the servers left running once every
 * client has its answer next to the servers answered (a server nobody was answered for is one a
 * client gave up on). Run as root (it creates `jg-bench-storm-N` users).
 * Usage: node --import tsx bench/storm-users.ts [--users 10] [--starts 10]
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LineProcess, START_CLIENT, type StartResult } from '../test/batch/line-process.js';
import { generateTree } from '../test/fixtures/generate.js';
import { asUser, ensureUser } from '../test/helpers/users.js';
import { argValue, importDist, requireBuiltDist, startDaemon } from './shipped.js';

requireBuiltDist('storm-users');
const { GeopmClient } = await importDist<typeof import('../src/ipc/geopm-client.js')>('ipc/geopm-client.js');
const USERS = argValue('--users', 10);
const STARTS = argValue('--starts', 10);
const users = Array.from({ length: USERS }, (_, i) => ensureUser(`jg-bench-storm-${i}`));

const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? Number.NaN;
const ms = (value: number) => Number(value.toFixed(0));

/** Child processes of `pid`: the daemon's batch servers (and its one spare). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** How a start ended, from its client's answer. */
function outcome(r: StartResult): string {
  if (r.ok) return 'started';
  if (/limit reached/.test(r.message ?? '')) return 'refused_over_limit';
  if (/JOULEGATE_BATCH_START_TIMEOUT/.test(r.message ?? '')) return 'given_up_at_deadline';
  if (/no reply/.test(r.message ?? '')) return 'client_timed_out';
  return `other: ${r.message}`;
}

const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-storm-users-'));
chmodSync(work, 0o755);
const tree = join(work, 'sysroot');
generateTree(tree, { packages: 2, coresPerPackage: 16, threadsPerCore: 2, cpufreq: 'cpu' });
chmodSync(tree, 0o755);
const running = await startDaemon(work, { JOULEGATE_SYSROOT: tree });
const clients: { user: number; client: LineProcess }[] = [];
try {
  const admin = await GeopmClient.connect({ address: running.address });
  await admin.platformSetGroupAccess('', ['TIME'], []);
  admin.close();
  const env = [
    'env',
    `DBUS_SYSTEM_BUS_ADDRESS=${running.address}`,
    'JOULEGATE_BUS_NAME=io.github.geopm',
    `JOULEGATE_RUN_PATH=${join(work, 'run')}`,
  ];
  for (const [i, u] of users.entries())
    for (let s = 0; s < STARTS; s++)
      clients.push({ user: i, client: LineProcess.start([...asUser(u), ...env], START_CLIENT) });
  await Promise.all(clients.map((c) => c.client.next()));
  const stormStart = performance.now();
  for (const c of clients) c.client.send('go');
  const results = await Promise.all(
    clients.map(async (c) => ({ user: c.user, ...(await c.client.next<StartResult>()) })),
  );
  const stormMs = performance.now() - stormStart;
  const answered = results.filter((r) => r.ok).map((r) => r.serverPid!);
  await new Promise((r) => setTimeout(r, 1000));
  const serversLeft = childrenOf(running.daemon.pid!).filter((pid) => answered.includes(pid) === false);
  const outcomes: Record<string, number> = {};
  for (const r of results) outcomes[outcome(r)] = (outcomes[outcome(r)] ?? 0) + 1;
  const firstStart = users.map((_, i) => {
    const own = results.filter((r) => r.user === i && r.ok).map((r) => r.ms);
    return own.length > 0 ? ms(Math.min(...own)) : null;
  });
  const answerMs = results.map((r) => r.ms);
  console.log(
    JSON.stringify(
      {
        bench: 'storm-users',
        users: USERS,
        starts_per_user: STARTS,
        storm_ms: ms(stormMs),
        outcomes,
        start_batch_ms: { p50: ms(quantile(answerMs, 0.5)), max: ms(Math.max(...answerMs)) },
        answered_after_25_s: answerMs.filter((t) => t > 25_000).length,
        first_start_ms_per_user: firstStart,
        started_per_user: users.map((_, i) => results.filter((r) => r.user === i && r.ok).length),
        daemon_children_not_answered: {
          count: serversLeft.length,
          note: 'the spare the daemon keeps loaded is one of these',
        },
      },
      null,
      2,
    ),
  );
} finally {
  await Promise.all(clients.map((c) => c.client.end()));
  await running.stop();
  rmSync(work, { recursive: true, force: true });
}
