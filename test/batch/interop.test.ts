import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { run } from '../helpers/cli.js';
import { needsCompiler, needsDaemon, requirements, whenMet } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { asUser, ensureUser } from '../helpers/users.js';
import { ServiceHarness, waitFor } from '../service/harness.js';
import { compileFake } from './c-fakes.js';
import { ClientDriver } from './driver.js';

const skip = requirements(needsDaemon(), needsCompiler());

// The batch protocol across implementations, with real processes on both ends: a C client and
// a C server written from the protocol facts (test/fakes/geopm_batch_*.c, GEOPM's BatchClient
// and BatchServer as described in the reference) against joulegate's server, started by
// joulegated on a private bus, and joulegate's BatchClient.

const C_CLIENT = compileFake('geopm_batch_client');
const C_SERVER = compileFake('geopm_batch_server');

const user = whenMet(skip, () => ensureUser('jg-batch-interop'));
const h = new ServiceHarness();

/** Two cpufreq policies on the harness's 4 CPUs, frequencies in kHz as sysfs writes them. */
const POLICIES = {
  policy0: { affected_cpus: '0 1', scaling_cur_freq: 2100000, scaling_max_freq: 3000000 },
  policy2: { affected_cpus: '2 3', scaling_cur_freq: 1900000, scaling_max_freq: 3100000 },
};
const policyFile = (policy: string, file: string) =>
  join(h.sysroot, 'sys/devices/system/cpu/cpufreq', policy, file);

// Set up at top level, not in before(): the helpers register their cleanup with after(), which
// inside a hook would run as soon as the hook ends.
await whenMet(skip, () => h.setup());
for (const [policy, files] of Object.entries(POLICIES)) {
  mkdirSync(policyFile(policy, ''), { recursive: true });
  const all = { ...files, scaling_min_freq: 800000, cpuinfo_min_freq: 800000, cpuinfo_max_freq: 3500000 };
  for (const [file, value] of Object.entries(all)) writeFileSync(policyFile(policy, file), `${value}\n`);
}
// The test user reaches the batch files in the run dir by name only.
chmodSync(dirname(h.runDir), 0o711);
await whenMet(skip, () => h.startDaemon());
await whenMet(skip, () =>
  h.client([
    {
      call: 'platformSetGroupAccess',
      args: [
        '',
        ['CPUFREQ::SCALING_CUR_FREQ', 'CPUFREQ::SCALING_MAX_FREQ', 'FILECTL::COUNTER', 'FILECTL::LIMIT'],
        ['CPUFREQ::SCALING_MAX_FREQ', 'FILECTL::LIMIT'],
      ],
    },
  ]),
);

const CPU = 3;
const PACKAGE = 1;
const BOARD = 0;
type Request = { name: string; domain: number; idx: number };
const SIGNALS: Request[] = [
  { name: 'CPUFREQ::SCALING_CUR_FREQ', domain: CPU, idx: 1 },
  { name: 'CPUFREQ::SCALING_CUR_FREQ', domain: CPU, idx: 2 },
  { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: CPU, idx: 3 },
  { name: 'FILECTL::LIMIT', domain: PACKAGE, idx: 1 },
  { name: 'FILECTL::COUNTER', domain: BOARD, idx: 0 },
];
const CONTROLS: Request[] = [
  { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: CPU, idx: 2 },
  { name: 'FILECTL::LIMIT', domain: PACKAGE, idx: 0 },
];

/**
 * A D-Bus client of joulegated running as the test user that opens a session and starts a
 * batch server, then holds its connection: the batch files wait under the returned key.
 */
async function startJoulegateBatch(signals: Request[], controls: Request[]) {
  const held = await h.heldClient(
    [{ call: 'platformOpenSession' }, { call: 'platformStartBatch', args: [signals, controls] }],
    // Its own Unix session: write mode then belongs to this client.
    { user, setsid: true },
  );
  const started = held.results[1]!;
  assert.ok(started.ok, `${started.message}\n${h.daemonLog}`);
  const { serverKey, serverPid } = started.value as { serverKey: string; serverPid: number };
  const release = async () => {
    await held.release();
    // The next batch may take write mode only once the daemon has closed this session (and
    // freed write mode, after restoring the controls, when the batch had controls).
    const last =
      controls.length > 0 ? `controls restored for pid ${serverKey} ` : `session of pid ${serverKey} closed`;
    assert.ok(await waitFor(() => h.daemonLog.includes(last)), h.daemonLog);
  };
  return { key: serverKey, serverPid, release };
}

/** Runs the C client as the test user; one parsed JSON line per step. */
async function cClient(runDir: string, key: string, counts: [number, number], steps: string[]) {
  const r = await run(C_CLIENT, [runDir, key, String(counts[0]), String(counts[1]), ...steps], {
    prefix: asUser(user),
    timeoutMs: 30_000,
  });
  assert.equal(r.code, 0, `${r.stdout}${r.stderr}\n${h.daemonLog}`);
  return r.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A run dir like /run/geopm: root-owned, 0711. */
function privateRunDir(): string {
  const dir = tempDir('jg-batch-interop-run-');
  chmodSync(dir, 0o711);
  return dir;
}

const cServers: ChildProcess[] = [];
after(() => {
  for (const p of cServers) if (p.exitCode === null) p.kill('SIGKILL');
});

/** Starts the C server as root for `key`; resolves once its files exist. */
async function startCServer(dir: string, key: string, signalFiles: string[], controlFiles: string[]) {
  const args = [
    dir,
    key,
    ...signalFiles.flatMap((f) => ['-s', f]),
    ...controlFiles.flatMap((f) => ['-c', f]),
  ];
  const proc = spawn(C_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  cServers.push(proc);
  let stderr = '';
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
      if (d.includes('ready')) resolve();
    });
    proc.on('exit', (code) => reject(new Error(`C server exited with ${code}: ${stderr}`)));
  });
  return { exited, stderr: () => stderr };
}

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};
const batchFiles = (dir: string) => readdirSync(dir).filter((f) => f.startsWith('batch-'));

test('a C client reads signals and writes controls through a joulegated batch server', { skip }, async () => {
  const server = await startJoulegateBatch(SIGNALS, CONTROLS);
  let released = false;
  try {
    const lines = await cClient(
      h.runDir,
      server.key,
      [SIGNALS.length, CONTROLS.length],
      ['r', 'w=2500000000,55.25', 'r', 'q'],
    );
    // cpufreq files hold kHz, signals are Hz; FILECTL::LIMIT package 1 and COUNTER are fixed.
    assert.deepEqual(lines[0], { read: [2.1e9, 1.9e9, 3.1e9, 100, 42] });
    assert.deepEqual(lines[1], { write: 'ok' });
    assert.equal(readFileSync(policyFile('policy2', 'scaling_max_freq'), 'utf8'), '2500000\n');
    assert.equal(h.control('FILECTL-LIMIT-0'), '55.25');
    assert.equal(readFileSync(policyFile('policy0', 'scaling_max_freq'), 'utf8'), '3000000\n');
    assert.deepEqual(lines[2], { read: [2.1e9, 1.9e9, 2.5e9, 100, 42] });
    assert.deepEqual(lines[3], { quit: 'ok' });
    assert.ok(await waitFor(() => gone(server.serverPid)), 'the server ends on q');
    assert.doesNotMatch(h.daemonLog, new RegExp(`batch server ${server.serverPid} (ended|failed)`));
    assert.deepEqual(batchFiles(h.runDir), []);
    await server.release();
    released = true;
    // The batch made it a write session: closing it restores what the C client wrote.
    assert.ok(
      await waitFor(
        () =>
          readFileSync(policyFile('policy2', 'scaling_max_freq'), 'utf8') === '3100000\n' &&
          h.control('FILECTL-LIMIT-0') === '100',
      ),
      h.daemonLog,
    );
  } finally {
    if (!released) await server.release();
  }
});

test("joulegate's BatchClient reads and writes exact values through a C server", { skip }, async () => {
  const dir = privateRunDir();
  const data = tempDir('jg-batch-interop-data-');
  const signalFiles = ['a', 'b', 'c', 'unreadable'].map((n) => join(data, `signal-${n}`));
  const controlFiles = ['a', 'b'].map((n) => join(data, `control-${n}`));
  ['0.1', '-42.5', '3.7e9', 'garbage'].forEach((text, i) => {
    writeFileSync(signalFiles[i]!, `${text}\n`);
  });
  for (const f of controlFiles) writeFileSync(f, '0\n');

  const client = await ClientDriver.start(user); // BatchClient as the test user
  const key = String(client.pid);
  const server = await startCServer(dir, key, signalFiles, controlFiles);
  assert.deepEqual(await client.send(`connect ${dir} ${key} 4 2`), { ok: true });
  // Values cross as doubles, bit for bit; an unreadable signal is NaN (null here).
  assert.deepEqual(await client.send('read'), { values: [0.1, -42.5, 3.7e9, null] });
  assert.deepEqual(readdirSync(dir), [], 'the C server unlinked everything once connected');

  assert.deepEqual(await client.send('write 1234.5678 0.25'), { ok: true });
  assert.equal(Number(readFileSync(controlFiles[0]!, 'utf8')), 1234.5678);
  assert.equal(Number(readFileSync(controlFiles[1]!, 'utf8')), 0.25);

  writeFileSync(signalFiles[0]!, '7\n');
  assert.deepEqual(await client.send('read'), { values: [7, -42.5, 3.7e9, null] });
  assert.deepEqual(await client.send('quit'), { ok: true });
  assert.equal(await server.exited, 0, server.stderr());
});

test("joulegate's BatchClient without koffi at first ('when-idle') reads and writes the same through a C server, then switches", {
  skip,
}, async () => {
  const dir = privateRunDir();
  const data = tempDir('jg-batch-interop-data-');
  const signalFiles = ['a', 'b'].map((n) => join(data, `signal-${n}`));
  const controlFiles = ['a', 'b'].map((n) => join(data, `control-${n}`));
  writeFileSync(signalFiles[0]!, '0.1\n');
  writeFileSync(signalFiles[1]!, '-42.5\n');
  for (const f of controlFiles) writeFileSync(f, '0\n');

  const client = await ClientDriver.start(user);
  const key = String(client.pid);
  const server = await startCServer(dir, key, signalFiles, controlFiles);
  assert.deepEqual(await client.send(`connect ${dir} ${key} 2 2 when-idle`), { ok: true });
  // Connected and nothing exchanged yet: Node's own calls, koffi not even loaded.
  assert.deepEqual(await client.send('state'), { native: false, koffi: false });
  // A write first: the settings reach the server through the file (pwrite), bit for bit.
  assert.deepEqual(await client.send('write 1234.5678 0.25'), { ok: true });
  assert.equal(Number(readFileSync(controlFiles[0]!, 'utf8')), 1234.5678);
  assert.equal(Number(readFileSync(controlFiles[1]!, 'utf8')), 0.25);
  // The driver's event loop turned after that exchange: the client has switched to koffi, the
  // buffers now mapped with the settings kept.
  assert.deepEqual(await client.send('state'), { native: true, koffi: true });
  assert.deepEqual(await client.send('read'), { values: [0.1, -42.5] });
  writeFileSync(signalFiles[0]!, '7\n');
  assert.deepEqual(await client.send('read'), { values: [7, -42.5] });
  assert.deepEqual(await client.send('write 5 6'), { ok: true });
  assert.deepEqual(
    controlFiles.map((f) => Number(readFileSync(f, 'utf8'))),
    [5, 6],
  );
  assert.deepEqual(await client.send('quit'), { ok: true });
  assert.equal(await server.exited, 0, server.stderr());
});

test("joulegate's BatchClient without koffi says the server stopped when it did, without hanging", {
  skip,
}, async () => {
  const dir = privateRunDir();
  const data = tempDir('jg-batch-interop-data-');
  const signalFile = join(data, 'signal');
  writeFileSync(signalFile, '3.7e9\n');
  const client = await ClientDriver.start(user);
  const key = String(client.pid);
  const server = await startCServer(dir, key, [signalFile], []);
  await client.send(`connect ${dir} ${key} 1 0 when-idle`);
  cServers.at(-1)!.kill('SIGKILL');
  await server.exited;
  // No exchange yet, so still Node's calls on non-blocking FIFOs: the failure, not a wait.
  assert.deepEqual(await client.send('state'), { native: false, koffi: false });
  const answer = await client.send('read');
  assert.match(answer.error ?? '', new RegExp(`^batch server ${key} stopped; batch read failed`));
  await client.send('quit');
});

test('a C server rejects the BatchClient\'s NaN ("leave unchanged") setting; the client says the server stopped', {
  skip,
}, async () => {
  const dir = privateRunDir();
  const data = tempDir('jg-batch-interop-data-');
  const controlFiles = ['a', 'b'].map((n) => join(data, `control-${n}`));
  for (const f of controlFiles) writeFileSync(f, '1\n');
  const client = await ClientDriver.start(user);
  const key = String(client.pid);
  const server = await startCServer(dir, key, [], controlFiles);
  await client.send(`connect ${dir} ${key} 0 2`);
  // joulegate's server skips NaN; GEOPM's adjusts every setting and rejects NaN.
  const answer = await client.send('write 5 NaN');
  assert.match(answer.error ?? '', new RegExp(`^batch server ${key} stopped; batch write failed`));
  assert.equal(await server.exited, 1);
  assert.match(server.stderr(), /setting 1 is NaN/);
  assert.deepEqual(
    controlFiles.map((f) => readFileSync(f, 'utf8')),
    ['1\n', '1\n'],
  );
  await client.send('quit');
});

test('the files joulegate creates match, byte for byte, those of the C server', { skip }, async () => {
  for (const [signals, controls] of [
    [SIGNALS.slice(0, 3), CONTROLS],
    [SIGNALS.slice(3), []],
  ] as const) {
    const joulegate = await startJoulegateBatch([...signals], [...controls]);
    const reference = await ClientDriver.start(user);
    const referenceDir = privateRunDir();
    const source = join(tempDir('jg-batch-interop-data-'), 'value');
    writeFileSync(source, '1\n');
    const cServer = await startCServer(
      referenceDir,
      String(reference.pid),
      signals.map(() => source),
      controls.map(() => source),
    );
    try {
      const named = (dir: string, key: string) =>
        batchFiles(dir)
          .map((f) => f.replace(key, 'KEY'))
          .sort();
      const ours = named(h.runDir, joulegate.key);
      assert.deepEqual(ours, named(referenceDir, String(reference.pid)));
      // Two FIFOs, and a buffer only for what the batch carries.
      assert.equal(ours.length, 2 + Number(signals.length > 0) + Number(controls.length > 0), ours.join(' '));
      for (const name of ours) {
        const mine = join(h.runDir, name.replace('KEY', joulegate.key));
        const theirs = join(referenceDir, name.replace('KEY', String(reference.pid)));
        const [a, b] = [statSync(mine), statSync(theirs)];
        for (const st of [a, b]) {
          assert.equal(st.mode & 0o777, 0o600, name);
          assert.deepEqual([st.uid, st.gid], [user.uid, user.gid], name);
        }
        assert.equal(a.isFIFO(), b.isFIFO(), name);
        if (a.isFIFO()) continue;
        const count = name.endsWith('-signal') ? signals.length : controls.length;
        assert.equal(a.size, 64 + 8 * count, name);
        assert.equal(b.size, a.size, name);
        // The header: glibc's process-shared error-checking mutex, then zeros.
        const header = readFileSync(mine).subarray(0, 64);
        assert.deepEqual(header, readFileSync(theirs).subarray(0, 64), name);
        assert.ok(
          header.some((byte) => byte !== 0),
          `${name}: the header holds the mutex`,
        );
      }
    } finally {
      // Both servers are waiting: connect and quit each with the other side's client.
      const quit = await cClient(h.runDir, joulegate.key, [signals.length, controls.length], ['q']);
      assert.deepEqual(quit, [{ quit: 'ok' }]);
      await reference.send(`connect ${referenceDir} ${reference.pid} ${signals.length} ${controls.length}`);
      await reference.send('quit');
      assert.equal(await cServer.exited, 0, cServer.stderr());
      await joulegate.release();
    }
  }
});
