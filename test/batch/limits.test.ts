import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ERROR_NAMES } from '../../src/ipc/dbus/interface.js';
import { run } from '../helpers/cli.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { asUser, ensureUser, type TestUser } from '../helpers/users.js';
import { batchDaemon, type ServiceHarness, waitFor } from '../service/harness.js';
import { LineProcess, START_CLIENT, type StartResult } from './line-process.js';

const skip = needsDaemon();

// Batch server limits, idle reaping and exit logging, end to end: joulegated (dist/) on private
// buses, clients as unprivileged users. Two daemons: one with small limits (and a long idle
// timeout), one that reaps idle servers after 1 s.
const DRIVER = new URL('../fixtures/batch/service-driver.ts', import.meta.url).pathname;
const alice = whenMet(skip, () => ensureUser('jg-batch-cap-a'));
const bob = whenMet(skip, () => ensureUser('jg-batch-cap-b'));

function prefixFor(h: ServiceHarness, user: TestUser): string[] {
  const vars = Object.entries({ ...h.env(), PATH: '/usr/bin:/bin' }).map(([k, v]) => `${k}=${v}`);
  return [...asUser(user), 'env', ...vars];
}

/** A start-client of `user` with its session open. */
async function startClient(h: ServiceHarness, user: TestUser): Promise<LineProcess> {
  const client = LineProcess.start(prefixFor(h, user), START_CLIENT);
  await client.next();
  return client;
}

async function startBatch(client: LineProcess): Promise<StartResult> {
  client.send('go');
  return client.next<StartResult>();
}

const batchFiles = (h: ServiceHarness) => readdirSync(h.runDir).filter((f) => f.startsWith('batch-'));
const sessionOf = (h: ServiceHarness, pid: number) =>
  JSON.parse(readFileSync(join(h.runDir, `session-${pid}.json`), 'utf8')) as { batch_server?: number };

const limited = await whenMet(skip, () =>
  batchDaemon({
    JOULEGATE_BATCH_MAX_PER_USER: '2',
    JOULEGATE_BATCH_MAX_SERVERS: '3',
    JOULEGATE_BATCH_IDLE_TIMEOUT: '60',
  }),
);
const reaping = await whenMet(skip, () => batchDaemon({ JOULEGATE_BATCH_IDLE_TIMEOUT: '1' }));

test('a start over the per-user or the node-wide limit is refused with InvalidArgument naming it', {
  skip,
}, async () => {
  const clients = await Promise.all([alice, alice, alice, bob, bob].map((u) => startClient(limited, u)));
  try {
    const [a1, a2, a3, b1, b2] = clients as [LineProcess, LineProcess, LineProcess, LineProcess, LineProcess];
    assert.equal((await startBatch(a1)).ok, true);
    assert.equal((await startBatch(a2)).ok, true);
    const overUser = await startBatch(a3);
    assert.equal(overUser.ok, false);
    assert.equal(overUser.name, ERROR_NAMES.InvalidArgument);
    assert.match(
      overUser.message!,
      new RegExp(`uid ${alice.uid} has 2 batch servers \\(limit 2, JOULEGATE_BATCH_MAX_PER_USER\\)`),
    );
    // The per-user limit is per user: bob may start, up to the node-wide limit of 3.
    assert.equal((await startBatch(b1)).ok, true);
    const overTotal = await startBatch(b2);
    assert.equal(overTotal.name, ERROR_NAMES.InvalidArgument);
    assert.match(overTotal.message!, /3 servers run on this node \(limit 3, JOULEGATE_BATCH_MAX_SERVERS\)/);
    // A client that goes away frees its server's place.
    await a1.end();
    let retry: StartResult | undefined;
    for (let i = 0; i < 50 && !retry?.ok; i++) {
      retry = await startBatch(b2);
      if (!retry.ok) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(retry?.ok, true, retry?.message);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
});

test('a server whose client never connects is reaped after the idle timeout; its place is freed', {
  skip,
}, async () => {
  const r = await run(process.execPath, ['--import', 'tsx', DRIVER, 'idle'], {
    prefix: [...prefixFor(reaping, alice), 'setsid', '--wait'],
    timeoutMs: 60_000,
  });
  assert.equal(r.code, 0, `${r.stdout}${r.stderr}\n${reaping.daemonLog}`);
  const [reaped, second] = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(reaped!.serverGone, true, reaping.daemonLog);
  assert.ok(
    (reaped!.afterMs as number) >= 900 && (reaped!.afterMs as number) < 5000,
    String(reaped!.afterMs),
  );
  assert.ok(((second!.values as number[])[0] ?? -1) >= 0);
  assert.match(reaping.daemonLog, /stopping batch server \d+: client \d+ did not connect within 1 s/);
  assert.match(reaping.daemonLog, /batch server \d+ of client \d+ ended: killed by SIGTERM/);
  assert.ok(await waitFor(() => batchFiles(reaping).length === 0), batchFiles(reaping).join(' '));
});

test('every server exit is logged with its cause: a client truncating its buffer (SIGBUS)', {
  skip,
}, async () => {
  const r = await run(process.execPath, ['--import', 'tsx', DRIVER, 'truncate'], {
    prefix: [...prefixFor(reaping, bob), 'setsid', '--wait'],
    timeoutMs: 60_000,
  });
  assert.equal(r.code, 0, `${r.stdout}${r.stderr}\n${reaping.daemonLog}`);
  const [truncated, after] = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.match(String(truncated!.error), /batch server \d+ stopped; batch read failed/);
  assert.equal(truncated!.serverGone, true);
  assert.ok((after!.time as number) >= 0, 'the daemon still serves the client');
  const pid = truncated!.serverPid as number;
  assert.ok(
    await waitFor(() =>
      new RegExp(`batch server ${pid} of client \\d+ ended: killed by SIGBUS`).test(reaping.daemonLog),
    ),
    reaping.daemonLog,
  );
  assert.equal(reaping.daemon!.exitCode, null);
});

test('a started server is recorded in the session and forgotten once it is gone', { skip }, async () => {
  const client = await startClient(reaping, alice);
  try {
    const started = await startBatch(client);
    assert.equal(started.ok, true, started.message);
    // Written while the reply travels (the server admits its client only after the write).
    assert.ok(
      await waitFor(() => sessionOf(reaping, client.pid).batch_server === started.serverPid, 5000),
      'the session record names the server',
    );
    // Reaped after 1 s: the record no longer names it.
    assert.ok(await waitFor(() => sessionOf(reaping, client.pid).batch_server === undefined, 5000));
  } finally {
    await client.end();
  }
});

test('both daemons stop cleanly on SIGTERM, leaving no batch file behind', { skip }, async () => {
  for (const h of [limited, reaping]) {
    assert.equal(await h.stopDaemon(), 0, h.daemonLog);
    assert.deepEqual(batchFiles(h), []);
  }
});
