import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, readdirSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { run, runCli } from '../../helpers/cli.js';
import { needsDaemon, whenMet } from '../../helpers/requirements.js';
import { asUser, ensureUser, type TestUser } from '../../helpers/users.js';
import { ServiceHarness, waitFor } from '../../service/harness.js';

const skip = needsDaemon();

// End to end: joulegated (dist/, on a private bus) starts batch servers through the launcher
// for clients running as an unprivileged user; the client side is the SERVICE backend that
// openPlatform adds for callers without CAP_SYS_ADMIN.
const DRIVER = new URL('../../fixtures/batch/service-driver.ts', import.meta.url).pathname;
const h = new ServiceHarness();
let user: TestUser;

function userPrefix(env: Record<string, string> = h.env()): string[] {
  // The plugin path is the daemon's (a root-only directory); clients load no plugins here.
  const vars = Object.entries({ ...env, PATH: '/usr/bin:/bin' })
    .filter(([k]) => k !== 'JOULEGATE_PLUGIN_PATH')
    .map(([k, v]) => `${k}=${v}`);
  return [...asUser(user), 'env', ...vars];
}

/** Runs a service-driver scenario as the test user; one parsed object per printed line. */
async function driver(scenario: string): Promise<Record<string, unknown>[]> {
  // Its own Unix session: write mode then belongs to the driver, not to the test's session leader.
  const r = await run(process.execPath, ['--import', 'tsx', DRIVER, scenario], {
    prefix: [...userPrefix(), 'setsid', '--wait'],
    timeoutMs: 120_000,
  });
  assert.equal(r.code, 0, `${scenario}: ${r.stdout}${r.stderr}\n${h.daemonLog}`);
  return r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};
const batchFiles = () => readdirSync(h.runDir).filter((f) => f.startsWith('batch-'));

// Set up at top level, not in before(): the helpers register their cleanup with after(), which
// inside a hook would run as soon as the hook ends.
// Only where the daemon can run (root): elsewhere every test here is skipped, with the reason.
if (!skip) user = ensureUser('jg-batch-svc');
await whenMet(skip, () => h.setup());
// The client reads the fixture topology itself and reaches batch files in the run dir by name.
chmodSync(h.sysroot, 0o755);
chmodSync(dirname(h.runDir), 0o711);
await whenMet(skip, () => h.startDaemon());
await whenMet(skip, () =>
  h.client([
    {
      call: 'platformSetGroupAccess',
      args: ['', ['TIME', 'FILECTL::COUNTER', 'FILECTL::LIMIT'], ['FILECTL::LIMIT']],
    },
  ]),
);

test('SERVICE offers exactly the allowed names, as NAME and SERVICE::NAME, with their info', {
  skip,
}, async () => {
  const [out] = await driver('names');
  const service = out!.service as { signals: string[]; controls: string[] };
  assert.deepEqual(service.signals, [
    'FILECTL::COUNTER',
    'FILECTL::LIMIT',
    'SERVICE::FILECTL::COUNTER',
    'SERVICE::FILECTL::LIMIT',
    'SERVICE::TIME',
    'TIME',
  ]);
  assert.deepEqual(service.controls, ['FILECTL::LIMIT', 'SERVICE::FILECTL::LIMIT']);
  const counter = out!.counter as Record<string, unknown>;
  assert.equal(counter.description, 'a constant test signal');
  assert.equal(counter.units, 4); // joules, carried in the description text
  assert.equal(counter.backend, 'SERVICE');
  const limit = out!.limitControl as Record<string, unknown>;
  assert.equal(limit.domain, 1); // package
  assert.equal(limit.aggregation, 0); // sum, from the signal of the same name
});

test('batch reads and writes through the daemon-started server; close restores and cleans up', {
  skip,
}, async () => {
  const lines = await driver('batch');
  assert.deepEqual(lines[0], { step: 'first read', values: [100, 42, 200] });
  const serverPid = (lines[1] as { pid: number }).pid;
  assert.ok(Number.isInteger(serverPid) && serverPid > 0);
  assert.match(h.daemonLog, new RegExp(`batch server ${serverPid} started for pid`));
  // A board read of a sum-aggregated package signal adds both packages (100 + 77).
  assert.deepEqual(lines[2], { step: 'after write', values: [77, 42, 177] });
  assert.deepEqual(lines[3], { step: 'closed' });
  // The session was a write session: closing it restored the control and stopped the server.
  assert.ok(await waitFor(() => h.control('FILECTL-LIMIT-1') === '100'), h.daemonLog);
  assert.deepEqual(batchFiles(), []);
});

test('SERVICE writes send the last setting of every control, never NaN (a GEOPM server ends on NaN)', {
  skip,
}, async () => {
  const lines = await driver('resend');
  // Nothing adjusted: nothing to write, and no batch server started for it.
  assert.deepEqual(lines[0], { step: 'nothing adjusted', error: null, server: null });
  // One control never adjusted: refused before anything is sent, naming it.
  assert.equal(lines[1]!.step, 'one never adjusted');
  assert.equal(
    lines[1]!.error,
    'SERVICE: FILECTL::LIMIT (package 1) was never adjusted: adjust every pushed control before the first writeBatch()',
  );
  assert.equal(lines[1]!.server, null);
  assert.equal(lines[2]!.step, 'both adjusted');
  assert.equal(lines[2]!.error, null);
  const serverPid = lines[2]!.server as number;
  assert.ok(Number.isInteger(serverPid) && serverPid > 0);
  // The server took the second write (a NaN would have left package 0 at 55) and is the same one.
  assert.deepEqual(lines[3], { step: 'no new adjust', error: null, server: serverPid });
  assert.deepEqual(lines[4], { step: 'values', moved: 55, after: [61, 62] });
  assert.ok(await waitFor(() => h.control('FILECTL-LIMIT-0') === '100'), h.daemonLog);
  assert.deepEqual(batchFiles(), []);
});

test('closing the D-Bus session stops the batch server; the client gets a clear error', {
  skip,
}, async () => {
  const lines = await driver('session-close');
  assert.equal(lines[0]!.step, 'read');
  assert.ok((lines[0]!.values as number[])[0]! >= 0);
  assert.deepEqual(lines[1], { step: 'session closed', serverGone: true });
  assert.match(String(lines[2]!.error), /batch server \d+ stopped; batch read failed/);
  assert.deepEqual(batchFiles(), []);
});

test('a malformed byte ends that batch server only; the daemon keeps serving the client', {
  skip,
}, async () => {
  const lines = await driver('malformed');
  assert.deepEqual(lines[0], { step: 'malformed', reply: 0, serverGone: true });
  assert.equal(lines[1]!.step, 'daemon still answers');
  assert.ok((lines[1]!.time as number) >= 0);
  assert.equal(lines[2]!.step, 'second server');
  assert.ok((lines[2]!.values as number[])[0]! >= 0);
  assert.equal(h.daemon!.exitCode, null);
  assert.match(h.daemonLog, /unknown message byte 120/);
  assert.deepEqual(batchFiles(), []);
});

test('StopBatch after the client quit is acknowledged, and the next start of that uid gets the same server back', {
  skip,
}, async () => {
  const logBefore = h.daemonLog.length;
  const lines = (await driver('cycles')) as { serverPid: number; values: number[]; stop: string | null }[];
  assert.equal(lines.length, 4);
  for (const line of lines) {
    assert.equal(line.stop, null, 'PlatformStopBatch acknowledged');
    assert.ok(line.values[0]! >= 0);
  }
  // `released` is written before `q` is answered: the daemon knows the server is free again
  // before the client's StopBatch reaches it, so the server is kept, not stopped.
  assert.deepEqual(
    lines.map((l) => l.serverPid),
    lines.map(() => lines[0]!.serverPid),
    h.daemonLog,
  );
  assert.equal(
    [
      ...h.daemonLog
        .slice(logBefore)
        .matchAll(
          new RegExp(
            `batch server ${lines[0]!.serverPid} of client \\d+ released \\(quit; 0 reads in the native loop, 1 in JavaScript\\)`,
            'g',
          ),
        ),
    ].length,
    4,
  );
  assert.deepEqual(batchFiles(), []);
});

test('`joulegate session` run by a non-admin samples through the batch server', { skip }, async () => {
  const startedBefore = [...h.daemonLog.matchAll(/batch server \d+ started for pid/g)].length;
  const r = await runCli(['session', '-t', '0.6', '-p', '0.2'], {
    prefix: userPrefix(),
    input: 'FILECTL::COUNTER board 0\nFILECTL::LIMIT package 0\n',
    timeoutMs: 120_000,
  });
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trim().split('\n');
  assert.equal(rows[0], '"FILECTL::COUNTER","FILECTL::LIMIT-package-0"');
  assert.ok(rows.length >= 3, r.stdout);
  for (const row of rows.slice(1)) assert.equal(row, '42,100');
  const started = [...h.daemonLog.matchAll(/batch server \d+ started for pid/g)].length;
  assert.equal(started, startedBefore + 1, 'the session sampled through one batch server');
  assert.deepEqual(batchFiles(), []);
});

test('TIME: one clock for D-Bus and batch reads, native to cpu, readable at every domain', {
  skip,
}, async () => {
  const [out] = await driver('clock');
  const { dbusBefore, batch, dbusAfter, info, domains } = out as {
    dbusBefore: number;
    batch: [number, number];
    dbusAfter: number;
    info: { domain: number; aggregation: number; format: number; behavior: number };
    domains: Record<string, number>;
  };
  // The batch server counts from the daemon's origin, not from its own start: its TIME lies
  // between the D-Bus reads made just before and just after it.
  assert.ok(dbusBefore > 0 && batch[0] >= dbusBefore, JSON.stringify(out));
  assert.ok(batch[1] >= batch[0] && dbusAfter >= batch[1], JSON.stringify(out));
  const { domain, aggregation, format, behavior } = info;
  assert.deepEqual([domain, aggregation, format, behavior], [3, 11, 0, 1]); // cpu, select_first, double, monotone
  assert.deepEqual(Object.keys(domains), ['cpu', 'core', 'package', 'board']);
  for (const value of Object.values(domains)) assert.ok(value >= dbusAfter, JSON.stringify(out));
  // `joulegate read` by the same user goes through the daemon (SERVICE) at every domain.
  for (const [name, domain, idx] of [
    ['TIME', 'cpu', '1'],
    ['TIME', 'core', '1'],
    ['TIME', 'package', '1'],
    ['TIME', 'board', '0'],
    ['SERVICE::TIME', 'cpu', '1'],
    ['SERVICE::TIME', 'board', '0'],
  ]) {
    const r = await runCli(['read', name!, domain!, idx!], { prefix: userPrefix() });
    assert.equal(r.code, 0, `${domain}: ${r.stderr}`);
    assert.equal(r.stderr, '');
    assert.ok(Number(r.stdout) >= dbusAfter, `${domain}: ${r.stdout} < ${dbusAfter}`);
  }
});

test('without a reachable daemon a non-admin gets local signals and a one-line warning', {
  skip,
}, async () => {
  const env = { ...h.env(), DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${h.runDir}/no-such-bus` };
  const ok = await runCli(['read', 'TIME', 'board', '0'], { prefix: userPrefix(env) });
  assert.equal(ok.code, 0, ok.stderr);
  assert.ok(Number(ok.stdout) >= 0);
  assert.match(
    ok.stderr,
    /^Warning: <joulegate>: the joulegate daemon is not reachable \(.+\); only signals/,
  );
  assert.equal(ok.stderr.trim().split('\n').length, 1);
  const missing = await runCli(['read', 'FILECTL::COUNTER', 'board', '0'], { prefix: userPrefix(env) });
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /FILECTL::COUNTER/);
});

// Last: kills the daemon.
test('servers still waiting for their clients end, and clean up, when the daemon is killed', {
  skip,
}, async () => {
  const prefix = [...userPrefix(), 'setsid', '--wait'];
  const holders = [0, 1].map(() =>
    spawn(prefix[0]!, [...prefix.slice(1), process.execPath, '--import', 'tsx', DRIVER, 'hold'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const exited = holders.map((p) => new Promise((resolve) => p.on('exit', resolve)));
  try {
    const firstLine = (holder: ChildProcess) =>
      new Promise<string>((resolve) => {
        let out = '';
        holder.stdout!.setEncoding('utf8');
        holder.stdout!.on('data', (d: string) => {
          out += d;
          if (out.includes('\n')) resolve(out.split('\n')[0]!);
        });
      });
    const started = (await Promise.all(holders.map(firstLine))).map(
      (line) => JSON.parse(line) as { serverPid: number; serverKey: string },
    );
    const servers = started.map((s) => s.serverPid);
    for (const pid of servers) assert.ok(!gone(pid));
    assert.equal(batchFiles().length, 6, 'each: a signal buffer and two FIFOs wait for the client');
    // The second server's FIFOs lose their names (as when a new daemon cleans the run dir):
    // it must still be able to stop waiting.
    for (const end of ['in', 'out'])
      unlinkSync(join(h.runDir, `batch-status-${started[1]!.serverKey}-${end}`));
    h.daemon!.kill('SIGKILL');
    assert.ok(await waitFor(() => servers.every(gone)), 'a batch server outlived its daemon');
    assert.deepEqual(batchFiles(), []);
  } finally {
    for (const p of holders) p.stdin!.end();
    await Promise.all(exited);
  }
});
