import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, createWriteStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, test } from 'node:test';
import { DBusRemoteError } from '../../src/ipc/dbus/connection.js';
import { ERROR_NAMES } from '../../src/ipc/dbus/interface.js';
import { JoulegateError } from '../../src/platform/errors.js';
import { processIdentity, ticksSinceBoot } from '../../src/platform/process.js';
import { callerProcessNow } from '../../src/service/caller-access.js';
import { type BusQuery, callerOfConnection } from '../../src/service/caller-identity.js';
import { openPidfds } from '../helpers/proc-stat.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { asUser, ensureUser, type TestUser } from '../helpers/users.js';
import { ServiceHarness, STRICT_ANSWERS, waitFor } from './harness.js';

const skip = needsDaemon();

// Admin rights belong to the process that opened a bus connection, not to whatever process
// holds its pid now. A connection handed to a child outlives its creator; once a root process
// reuses the creator's pid, the connection must not act with that root process's rights.

const HANDOFF = new URL('./handoff-client.mjs', import.meta.url).pathname;

const h = new ServiceHarness(STRICT_ANSWERS);
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());
const user = whenMet(skip, () => ensureUser('jgsvc_handoff'));

const strayPids: number[] = [];
after(() => {
  for (const pid of strayPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
});

interface HandedOff {
  creatorPid: number;
  /** Outcomes of the creator's own calls, in order. */
  creatorCalls: Record<string, unknown>[];
  send(call: { member: string; signature?: string; body?: unknown[] }): Promise<Record<string, unknown>>;
  close(): void;
}

interface HandOffOptions {
  /** Calls the creator makes before it hands the connection off. */
  calls?: { member: string; signature?: string; body?: unknown[] }[];
  /** The child drops to this user (the creator runs as root). */
  child?: TestUser;
  /**
   * The creator leads a Unix session of its own: write mode is held for a session leader while
   * it lives (the test runner's would keep the creator's controls). Its pid is then not reused
   * while the child, a member of that session, lives.
   */
  ownUnixSession?: boolean;
}

/**
 * Runs the creator as `as` (root when undefined); resolves once it has exited. The daemon has
 * seen the connection before it was handed off (see handoff-client.mjs).
 */
async function handOff(as: TestUser | undefined, options: HandOffOptions = {}): Promise<HandedOff> {
  const dir = tempDir('jg-handoff-');
  chmodSync(dir, 0o755);
  const fifo = join(dir, 'calls');
  execFileSync('mkfifo', ['-m', '0666', fifo]);
  const envArgs = Object.entries({ ...h.env(), PATH: '/usr/bin:/bin' }).map(([k, v]) => `${k}=${v}`);
  const words = [
    ...(as ? asUser(as) : []),
    ...(options.ownUnixSession ? ['setsid', '--wait'] : []),
    'env',
    ...envArgs,
    process.execPath,
    HANDOFF,
    'creator',
    fifo,
    JSON.stringify({
      calls: options.calls,
      ...(options.child ? { childUid: options.child.uid, childGid: options.child.gid } : {}),
    }),
  ];
  const creator = spawn(words[0]!, words.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => creator.on('exit', () => resolve()));
  const lines = createInterface({ input: creator.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  const {
    pid,
    child,
    calls: creatorCalls,
  } = JSON.parse(first.value as string) as {
    pid: number;
    child: number;
    calls: Record<string, unknown>[];
  };
  strayPids.push(child);
  await exited;
  const calls = createWriteStream(fifo);
  return {
    creatorPid: pid,
    creatorCalls,
    // The child answers on the creator's stdout pipe, which it inherited.
    send: async (call) => {
      calls.write(`${JSON.stringify(call)}\n`);
      return JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
    },
    close: () => calls.end(),
  };
}

/**
 * Tries to start a root process (with CAP_SYS_ADMIN) whose pid is `pid`: a shell loop sets the
 * kernel's last-pid counter and forks at once, until its child gets that pid, then leaves that
 * child (a sleep) running. Another process on the machine (a concurrent test's fork or thread)
 * can win the race for the pid between the two steps and keep it; then this gives up at once and
 * returns false.
 */
async function rootProcessAt(pid: number): Promise<boolean> {
  const script = `
    for i in $(seq 3000); do
      echo ${pid - 1} > /proc/sys/kernel/ns_last_pid
      sleep 600 </dev/null >/dev/null 2>&1 &
      if [ $! = ${pid} ]; then echo found; exit 0; fi
      kill $!
      if [ -e /proc/${pid} ]; then echo taken; exit 0; fi
    done
    echo missed`;
  const steer = spawn('bash', ['-c', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  steer.stdout!.on('data', (d) => {
    out += d;
  });
  await new Promise((resolve) => steer.on('close', resolve));
  if (out.includes('found')) {
    strayPids.push(pid);
    return true;
  }
  if (out.includes('taken')) return false;
  throw new Error(`no process could be started at pid ${pid}: ${out.trim()}`);
}

/**
 * A connection handed off by a creator (run as `as`) that has exited, with a root process now
 * at the creator's pid. A fresh creator is tried when another process took the pid first.
 */
async function handOffToRootAtCreatorPid(
  as: TestUser | undefined,
  options: HandOffOptions,
): Promise<HandedOff> {
  for (let attempt = 1; ; attempt++) {
    const conn = await handOff(as, options);
    if (await rootProcessAt(conn.creatorPid)) return conn;
    conn.close();
    if (attempt === 5) throw new Error(`other processes took the creator's pid ${attempt} times in a row`);
  }
}

const allLists = ['', ['FILECTL::COUNTER', 'FILECTL::LIMIT'], ['FILECTL::LIMIT']];
const defaultSignals = join(h.configDir, '0.DEFAULT_ACCESS', 'allowed_signals');

for (const firstCall of [true, false]) {
  const when = firstCall ? 'looked up while its creator lived' : 'first used after the pid was reused';
  test(`a handed-off connection ${when} gets no admin rights from a root process at its creator's pid`, {
    skip,
  }, async () => {
    const conn = await handOffToRootAtCreatorPid(
      user,
      firstCall ? { calls: [{ member: 'TopoGetCache' }] } : {},
    );
    try {
      for (const call of [
        { member: 'PlatformSetGroupAccess', signature: 'sasas', body: allLists },
        { member: 'PlatformLockControl' },
        { member: 'PlatformGetGroupAccess', signature: 's', body: ['0.LOG_REQUEST'] },
      ]) {
        const r = await conn.send(call);
        assert.equal(r.name, ERROR_NAMES.PermissionDenied, `${call.member}: ${JSON.stringify(r)}`);
      }
      // Nor does it get a session in the root process's name.
      const opened = await conn.send({ member: 'PlatformOpenSession' });
      assert.equal(opened.name, ERROR_NAMES.NoSession, JSON.stringify(opened));
      assert.equal(existsSync(join(h.runDir, `session-${conn.creatorPid}.json`)), false);
      assert.equal(existsSync(defaultSignals), false, 'the default access list was written');
      assert.equal(existsSync(join(h.runDir, 'CONTROL_ADMIN_LOCK')), false);
      // Calls that need no identity still work on the connection.
      assert.equal((await conn.send({ member: 'PlatformGetAllAccess' })).ok, true);
    } finally {
      conn.close();
    }
  });
}

test('a root connection handed off keeps no admin rights once its creator exited', { skip }, async () => {
  const conn = await handOffToRootAtCreatorPid(undefined, { calls: [{ member: 'TopoGetCache' }] });
  try {
    const r = await conn.send({ member: 'PlatformSetGroupAccess', signature: 'sasas', body: allLists });
    assert.equal(r.name, ERROR_NAMES.PermissionDenied, JSON.stringify(r));
    assert.equal(existsSync(defaultSignals), false);
  } finally {
    conn.close();
  }
});

const ADMIN_CALLS = [
  { member: 'PlatformLockControl' },
  { member: 'PlatformGetGroupAccess', signature: 's', body: ['0.LOG_REQUEST'] },
  { member: 'PlatformSetGroupAccess', signature: 'sasas', body: allLists },
];
const writeLimit = (value: number) => ({
  member: 'PlatformWriteControl',
  signature: 'siid',
  body: ['FILECTL::LIMIT', 1, 0, value],
});
const readCounter = { member: 'PlatformReadSignal', signature: 'sii', body: ['FILECTL::COUNTER', 0, 0] };

// The bus's credentials are those of the process that connected. A root process connects,
// never calls, and hands the connection to a child that drops to an unprivileged user; once a
// root process started after the connection holds the creator's pid, the start time tells the
// two apart.
test("a root connection held by an unprivileged child, first used after a root process took the creator's pid, gets nothing", {
  skip,
}, async () => {
  const conn = await handOffToRootAtCreatorPid(undefined, { child: user });
  try {
    for (const call of ADMIN_CALLS) {
      const r = await conn.send(call);
      assert.equal(r.name, ERROR_NAMES.PermissionDenied, `${call.member}: ${JSON.stringify(r)}`);
    }
    for (const call of [{ member: 'PlatformOpenSession' }, writeLimit(7), readCounter]) {
      const r = await conn.send(call);
      assert.equal(r.name, ERROR_NAMES.NoSession, `${call.member}: ${JSON.stringify(r)}`);
    }
    assert.equal(existsSync(join(h.runDir, `session-${conn.creatorPid}.json`)), false);
    assert.equal(existsSync(join(h.runDir, 'CONTROL_ADMIN_LOCK')), false);
    assert.equal(existsSync(defaultSignals), false, 'the default access list was written');
    assert.equal(h.control('FILECTL-LIMIT-0'), '100');
  } finally {
    conn.close();
  }
});

// A session belongs to the process that opened it. A child that inherited the connection acts
// as its parent while the parent lives (nothing on the bus tells them apart); once the parent
// has exited, the child neither reads, writes nor opens a session on the parent's behalf, and
// the parent's controls are restored.
test('a connection inherited across fork gets nothing from the session of its parent once the parent has exited', {
  skip,
}, async () => {
  const conn = await handOff(undefined, {
    calls: [{ member: 'PlatformOpenSession' }, writeLimit(55)],
    ownUnixSession: true,
  });
  try {
    for (const r of conn.creatorCalls) assert.equal(r.ok, true, JSON.stringify(r));
    for (const call of [readCounter, { member: 'PlatformOpenSession' }, readCounter, writeLimit(56)]) {
      const r = await conn.send(call);
      assert.equal(r.name, ERROR_NAMES.NoSession, `${call.member}: ${JSON.stringify(r)}`);
    }
    assert.ok(
      await waitFor(() => h.control('FILECTL-LIMIT-0') === '100'),
      `controls not restored: ${h.control('FILECTL-LIMIT-0')}`,
    );
    assert.equal(existsSync(join(h.runDir, `session-${conn.creatorPid}.json`)), false);
  } finally {
    conn.close();
  }
});

test("an admin's connection keeps its rights while its creator lives", { skip }, async () => {
  const [set] = await h.client([{ call: 'platformSetGroupAccess', args: allLists }]);
  assert.equal(set!.ok, true, set!.message);
  assert.equal(existsSync(defaultSignals), true);
});

test('a connection that left before its caller was looked up is a refusal naming it, not an internal error', async () => {
  const gone: BusQuery = async () => {
    throw new DBusRemoteError(
      'org.freedesktop.DBus.Error.NameHasNoOwner',
      "Could not get credentials of name ':1.15': no such name",
    );
  };
  await assert.rejects(callerOfConnection(gone, ':1.15', 0), (err: unknown) => {
    assert.ok(err instanceof JoulegateError, 'a client-facing error, not an internal one');
    assert.equal(err.message, 'connection :1.15 left the bus before its caller could be identified');
    return true;
  });
  const denied: BusQuery = async () => {
    throw new DBusRemoteError('org.freedesktop.DBus.Error.AccessDenied', 'not allowed');
  };
  await assert.rejects(
    callerOfConnection(denied, ':1.16', 0),
    /connection :1\.16 could not be identified: not allowed/,
  );
  // Anything else is the daemon's own fault and stays an internal error.
  const broken: BusQuery = async () => {
    throw new TypeError('boom');
  };
  await assert.rejects(callerOfConnection(broken, ':1.17', 0), TypeError);
});

test('a pinned caller comes with a handle on its process; a caller that is not identified keeps no pidfd', async () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  try {
    await once(child, 'spawn');
    const credentials =
      (uid: number): BusQuery =>
      async () => [
        ['ProcessID', ['u', child.pid!]],
        ['UnixUserID', ['u', uid]],
      ];
    const me = process.getuid!();
    const before = openPidfds();
    const pinned = await callerOfConnection(credentials(me), ':1.20', ticksSinceBoot(), true);
    assert.equal(pinned.startTicks, processIdentity(child.pid!)!.startTicks);
    assert.ok(pinned.handle?.running(), 'a handle on the live process');
    assert.equal(openPidfds(), before + 1);
    assert.equal(callerProcessNow(pinned)?.uid, me);
    // Another uid than the bus's, or a process younger than the connection: not its opener.
    for (const [uid, connectedBy] of [
      [me + 1, ticksSinceBoot()],
      [me, pinned.startTicks! - 1],
    ] as const) {
      const other = await callerOfConnection(credentials(uid), ':1.21', connectedBy, true);
      assert.deepEqual(other, { pid: child.pid, uid, startTicks: undefined });
    }
    const unpinned = await callerOfConnection(credentials(me), ':1.22', ticksSinceBoot(), false);
    assert.deepEqual(unpinned, { pid: child.pid, uid: me, startTicks: pinned.startTicks });
    assert.equal(openPidfds(), before + 1, 'only the pinned caller holds a pidfd');
    child.kill('SIGKILL');
    await exited;
    assert.equal(callerProcessNow(pinned), undefined, 'its process exited');
    assert.equal(callerProcessNow(unpinned), undefined, 'through /proc as well');
    pinned.handle!.close();
    assert.equal(openPidfds(), before);
  } finally {
    child.kill('SIGKILL');
  }
});
