import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { secureMakeDirs } from '../../src/service/secure-files.js';
import { DAEMON } from '../helpers/cli.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { ensureGroup, ensureUser } from '../helpers/users.js';
import { BUS_NAME, ServiceHarness, waitFor } from './harness.js';

const skip = needsDaemon();

// The daemon's claim on its run directory (one daemon per run dir, taken before anything there
// is touched), crash debris removed at start, and list directories that are never renamed.
const h = new ServiceHarness();
await whenMet(skip, () => h.setup());
const user = whenMet(skip, () => ensureUser('jg-rundir-user'));
const group = 'jg-rundir-grp';
whenMet(skip, () => ensureGroup(group));

// Left by a crash of an earlier daemon, before this one starts.
secureMakeDirs(h.runDir, 0o711);
chmodSync(dirname(h.runDir), 0o711);
const uuid = randomUUID();
const debris = [
  `session-4242.json-tmp-${uuid}`,
  `SAVE_FILES-${uuid}-tmp`,
  'batch-buffer-4242-signal',
  'batch-status-4242-in',
];
writeFileSync(join(h.runDir, debris[0]!), '{"half":');
mkdirSync(join(h.runDir, debris[1]!));
writeFileSync(join(h.runDir, debris[1]!, 'POWERCAP'), 'x');
for (const name of debris.slice(2)) writeFileSync(join(h.runDir, name), '');
writeFileSync(join(h.runDir, 'notes-tmp'), 'not ours to judge');
// A directory named like a group that is not a list directory (0755).
secureMakeDirs(h.configDir);
mkdirSync(join(h.configDir, group), { mode: 0o755 });
chmodSync(join(h.configDir, group), 0o755);
writeFileSync(join(h.configDir, group, 'unrelated'), 'x');

await whenMet(skip, () => h.startDaemon());
await whenMet(skip, () => h.client([{ call: 'platformSetGroupAccess', args: ['', ['TIME'], []] }]));

interface Outcome {
  proc: ChildProcess;
  /** True once it logged "ready"; false once it exited (code, stderr). */
  ready: boolean;
  code: number | null;
  stderr: string;
}

/** Runs another joulegated on the same run dir until it is ready or has exited. */
function anotherDaemon(env: Record<string, string> = {}): Promise<Outcome> {
  const proc = spawn(process.execPath, [DAEMON], {
    env: { ...process.env, ...h.env(), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.setEncoding('utf8');
  return new Promise((resolve) => {
    proc.stderr!.on('data', (d: string) => {
      stderr += d;
      if (stderr.includes('joulegated: ready')) resolve({ proc, ready: true, code: null, stderr });
    });
    proc.on('exit', (code) => resolve({ proc, ready: false, code, stderr }));
  });
}

test('crash debris in the run dir is removed at start, one line each; other names stay', { skip }, () => {
  const left = readdirSync(h.runDir);
  for (const name of debris) {
    assert.ok(!left.includes(name), `${name} is still there`);
    assert.match(h.daemonLog, new RegExp(`removed ${name} left in ${h.runDir} by an earlier run`));
  }
  assert.ok(left.includes('notes-tmp'));
});

test('an unprivileged GetGroupAccess never renames a directory named like the group; one warning', {
  skip,
}, async () => {
  const results = await h.client(
    Array.from({ length: 3 }, () => ({ call: 'platformGetGroupAccess', args: [group] })),
    { user },
  );
  for (const r of results) assert.deepEqual(r, { ok: true, value: { signals: [], controls: [] } });
  assert.deepEqual(readdirSync(h.configDir).sort(), ['0.DEFAULT_ACCESS', group]);
  assert.deepEqual(readdirSync(join(h.configDir, group)), ['unrelated']);
  assert.equal(statSync(join(h.configDir, group)).mode & 0o777, 0o755);
  const warnings = h.daemonLog
    .split('\n')
    .filter((l) => l.includes(`ignoring access lists in ${h.configDir}/${group}`));
  assert.equal(warnings.length, 1, h.daemonLog);
  assert.match(warnings[0]!, /it has mode 0755, expected 0700/);
});

test('a second daemon on the same run dir exits with one line and touches nothing', { skip }, async () => {
  const held = await h.heldClient(
    [
      { call: 'platformOpenSession' },
      { call: 'platformStartBatch', args: [[{ name: 'TIME', domain: 0, idx: 0 }], []] },
    ],
    { user },
  );
  try {
    assert.equal(held.results[1]!.ok, true, held.results[1]!.message);
    const serverPid = (held.results[1]!.value as { serverPid: number }).serverPid;
    const sessionPath = join(h.runDir, `session-${held.process.pid}.json`);
    // The record naming the server is written as the reply travels: the snapshot is taken after.
    assert.ok(await waitFor(() => readFileSync(sessionPath, 'utf8').includes(`"batch_server":${serverPid}`)));
    const before = { text: readFileSync(sessionPath, 'utf8'), mtime: statSync(sessionPath).mtimeMs };
    const entries = readdirSync(h.runDir).sort();

    // Under another bus name: the run dir's lock is what stops it (the name would first).
    const second = await anotherDaemon({ JOULEGATE_BUS_NAME: `${BUS_NAME}.second` });
    assert.equal(second.code, 1, second.stderr);
    assert.equal(
      second.stderr,
      `joulegated: another joulegated (pid ${h.daemon!.pid}) is running on ${h.runDir}; exiting\n`,
    );
    // Its batch server lives on, its session record and the run dir are as they were.
    assert.doesNotThrow(() => process.kill(serverPid, 0));
    assert.deepEqual(
      { text: readFileSync(sessionPath, 'utf8'), mtime: statSync(sessionPath).mtimeMs },
      before,
    );
    assert.deepEqual(readdirSync(h.runDir).sort(), entries);
    assert.equal(h.daemon!.exitCode, null);
  } finally {
    await held.release();
  }
});

test('an invalid batch setting stops the daemon at start with one line naming it', { skip }, async () => {
  for (const [name, value, wanted] of [
    ['JOULEGATE_BATCH_MAX_PER_USER', '0', 'an integer >= 1'],
    ['JOULEGATE_BATCH_IDLE_TIMEOUT', 'soon', 'a number of seconds >= 0.1'],
    ['JOULEGATE_BATCH_START_TIMEOUT', '0', 'a number of seconds >= 0.1'],
    ['JOULEGATE_BATCH_STARTS_AT_ONCE', '1.5', 'an integer >= 0'],
    ['JOULEGATE_BATCH_CLIENTS_PER_SERVER', '0', 'an integer >= 1'],
    ['JOULEGATE_BATCH_NATIVE_LOOP', 'yes', '0 or 1'],
    ['JOULEGATE_BATCH_FOLLOW_CLIENT', 'off', '0 or 1'],
  ] as const) {
    const outcome = await anotherDaemon({ [name]: value });
    assert.equal(outcome.code, 1);
    assert.equal(outcome.stderr, `joulegated: ${name} must be ${wanted}, not "${value}"\n`);
  }
});

test('after a crash, of two daemons started at once exactly one takes over', { skip }, async () => {
  const first = h.daemon!;
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const outcomes = await Promise.all([anotherDaemon(), anotherDaemon()]);
  after(() => {
    for (const o of outcomes) o.proc.kill('SIGKILL');
  });
  const winners = outcomes.filter((o) => o.ready);
  const losers = outcomes.filter((o) => !o.ready);
  assert.equal(winners.length, 1, outcomes.map((o) => o.stderr).join('\n---\n'));
  assert.equal(losers[0]!.code, 1);
  // The bus name decides, before either touches the run dir.
  assert.equal(
    losers[0]!.stderr,
    `joulegated: ${BUS_NAME} is already owned by pid ${winners[0]!.proc.pid} on ${h.bus.address}; exiting\n`,
  );
  const winner = winners[0]!.proc;
  const exited = new Promise<number | null>((r) => winner.once('exit', r));
  winner.kill('SIGTERM');
  assert.equal(await exited, 0);
});
