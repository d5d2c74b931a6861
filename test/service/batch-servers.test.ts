import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { LineProcess, START_CLIENT, type StartResult } from '../batch/line-process.js';
import { childPids } from '../helpers/proc-stat.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { asUser, ensureUser, type TestUser } from '../helpers/users.js';
import { batchDaemon, type ServiceHarness, waitFor } from './harness.js';

const skip = needsDaemon();

// Admission of batch server starts, end to end: joulegated (dist/) on a private bus, start
// clients as several real users racing. Starts load a process each (no spares) one at a time,
// so a burst queues: waiting starts hold no place under the limits, users take turns, and a
// start given up (the caller's connection gone, the start deadline passed) leaves no server.
const alice = whenMet(skip, () => ensureUser('jg-admit-a'));
const bob = whenMet(skip, () => ensureUser('jg-admit-b'));
const carol = whenMet(skip, () => ensureUser('jg-admit-c'));

/**
 * A daemon whose starts load a process each (no spares), one at a time; its servers wait for
 * their clients (which never connect here) as long as the test runs.
 */
const daemon = (env: Record<string, string>) =>
  batchDaemon({
    JOULEGATE_BATCH_SPARES: '0',
    JOULEGATE_BATCH_STARTS_AT_ONCE: '1',
    JOULEGATE_BATCH_IDLE_TIMEOUT: '600',
    ...env,
  });

/** Start clients of `user`, each with its session open. */
async function startClients(h: ServiceHarness, user: TestUser, count: number): Promise<LineProcess[]> {
  const vars = Object.entries({ ...h.env(), PATH: '/usr/bin:/bin', JOULEGATE_DBUS_TIMEOUT_MS: '120000' });
  const prefix = [...asUser(user), 'env', ...vars.map(([k, v]) => `${k}=${v}`)];
  const clients = Array.from({ length: count }, () => LineProcess.start(prefix, START_CLIENT));
  await Promise.all(clients.map((c) => c.next()));
  return clients;
}

/** Child processes of the daemon (its batch servers: no spares are kept). */
const serversOf = (h: ServiceHarness): number[] => childPids(h.daemon!.pid!);

/** Client pids in the order their servers started (the daemon logs each start). */
const startOrder = (h: ServiceHarness) =>
  [...h.daemonLog.matchAll(/batch server \d+ started for pid (\d+)/g)].map((m) => Number(m[1]));

const queued = await whenMet(skip, () =>
  daemon({ JOULEGATE_BATCH_MAX_SERVERS: '4', JOULEGATE_BATCH_START_TIMEOUT: '120' }),
);
const hurried = await whenMet(skip, () => daemon({ JOULEGATE_BATCH_START_TIMEOUT: '0.3' }));

test('two users bursting cannot lock out a third: waiting starts hold no place, users take turns', {
  skip,
}, async () => {
  const bursts = [...(await startClients(queued, alice, 5)), ...(await startClients(queued, bob, 5))];
  const [late] = await startClients(queued, carol, 1);
  const all = [...bursts, late!];
  try {
    for (const c of bursts) c.send('go');
    const results = bursts.map((c) => c.next<StartResult>());
    // Carol asks once the first server of the bursts is up: by then the other nine wait.
    await Promise.race(results);
    late!.send('go');
    const carolResult = await late!.next<StartResult>();
    const burstResults = await Promise.all(results);

    assert.equal(carolResult.ok, true, `${carolResult.message}\n${queued.daemonLog}`);
    const order = startOrder(queued);
    // One start ahead of her per user served before her, at most: alice, bob, then carol.
    assert.ok(order.indexOf(late!.pid) <= 2, `carol's start was number ${order.indexOf(late!.pid) + 1}`);
    // The node limit counts running servers: 4 started, every other start refused naming it.
    assert.equal(order.length, 4, order.join(' '));
    const refused = burstResults.filter((r) => !r.ok);
    assert.equal(refused.length, 7);
    for (const r of refused)
      assert.match(r.message!, /4 servers run on this node \(limit 4, JOULEGATE_BATCH_MAX_SERVERS\)/);
    assert.equal(serversOf(queued).length, 4);
  } finally {
    await Promise.all(all.map((c) => c.end()));
  }
  assert.ok(await waitFor(() => serversOf(queued).length === 0, 20_000), 'servers end with their clients');
});

test('a client that leaves while its start waits or loads leaves no server behind', { skip }, async () => {
  const [holder] = await startClients(queued, alice, 1);
  const [waiting, loading] = await startClients(queued, bob, 2);
  try {
    // The holder's start takes the one turn; the next start waits for it, and leaves.
    holder!.send('go');
    waiting!.send('leave');
    await waiting!.next();
    assert.equal((await holder!.next<StartResult>()).ok, true);
    // Alone, a start loads its process at once; its client leaves meanwhile.
    loading!.send('leave');
    await loading!.next();
    for (const c of [waiting!, loading!]) {
      const givenUp = `batch server start for pid ${c.pid} given up: the caller's connection`;
      assert.ok(await waitFor(() => queued.daemonLog.includes(givenUp), 30_000), queued.daemonLog);
    }
    // Only the holder's server runs; none was left for the clients that went.
    assert.ok(await waitFor(() => serversOf(queued).length === 1, 30_000), serversOf(queued).join(' '));
    assert.ok(!startOrder(queued).includes(waiting!.pid) && !startOrder(queued).includes(loading!.pid));
    const files = readdirSync(queued.runDir).filter((f) => f.startsWith('batch-'));
    assert.ok(
      files.every((f) => !f.includes(String(waiting!.pid)) && !f.includes(String(loading!.pid))),
      files.join(' '),
    );
  } finally {
    await Promise.all([holder!, waiting!, loading!].map((c) => c.end()));
  }
  assert.ok(await waitFor(() => serversOf(queued).length === 0, 20_000));
});

test('no start is answered after its deadline with a server left running', { skip }, async () => {
  const clients = await startClients(hurried, alice, 8);
  try {
    for (const c of clients) c.send('go');
    const results = await Promise.all(clients.map((c) => c.next<StartResult>()));
    const late = results.filter((r) => !r.ok);
    assert.ok(late.length >= 1, 'eight starts one at a time take longer than 0.3 s');
    for (const r of late)
      assert.match(r.message!, /could not start within 0\.3 s \(JOULEGATE_BATCH_START_TIMEOUT/);
    // Every server left running was answered to its client; the others' servers end.
    const answered = results.filter((r) => r.ok).map((r) => r.serverPid!);
    assert.ok(
      await waitFor(() => serversOf(hurried).sort().join() === [...answered].sort().join(), 30_000),
      `running ${serversOf(hurried).join(' ')}, answered ${answered.join(' ')}`,
    );
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
});

// GEOPM keys a client's server by the client's pid, as joulegated does, and under load one of
// GEOPM's servers left its buffer behind: every later start for that client then failed on it
// ("File exists", docs/geopm-side-by-side.md). A server that cannot clean up (SIGKILL) must not
// do that to its client here.
test('a server killed with SIGKILL leaves no batch files: the next start for its client succeeds', {
  skip,
}, async () => {
  const [client] = await startClients(queued, alice, 1);
  const filesOf = (pid: number) => readdirSync(queued.runDir).filter((f) => f.includes(`-${pid}-`));
  try {
    client!.send('go');
    const first = await client!.next<StartResult>();
    assert.equal(first.ok, true, `${first.message}\n${queued.daemonLog}`);
    assert.ok(filesOf(client!.pid).length > 0, 'the server made its files');
    process.kill(first.serverPid!, 'SIGKILL');
    const ended = `batch server ${first.serverPid} of client ${client!.pid} ended`;
    assert.ok(await waitFor(() => queued.daemonLog.includes(ended), 30_000), queued.daemonLog);
    assert.ok(await waitFor(() => filesOf(client!.pid).length === 0, 30_000), filesOf(client!.pid).join(' '));
    client!.send('go');
    const second = await client!.next<StartResult>();
    assert.equal(second.ok, true, `${second.message}\n${queued.daemonLog}`);
    assert.notEqual(second.serverPid, first.serverPid);
  } finally {
    await client!.end();
  }
  assert.ok(await waitFor(() => serversOf(queued).length === 0, 20_000));
});

test('both daemons stop cleanly on SIGTERM', { skip }, async () => {
  for (const h of [queued, hurried]) assert.equal(await h.stopDaemon(), 0, h.daemonLog);
});
