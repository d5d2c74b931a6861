import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { bufferPath, fifoPath } from '../../src/ipc/batch/protocol.js';
import { DomainType } from '../../src/platform/domains.js';
import { processExists } from '../../src/platform/process.js';
import { BatchServerLauncher } from '../../src/service/batch-launcher.js';
import {
  FILE_CONTROLS_PLUGIN,
  fileControlWrites,
  initFileControls,
  readFileControl,
} from '../helpers/file-controls.js';
import { needsDaemon } from '../helpers/requirements.js';
import { FIXTURES, tempDir } from '../helpers/tmp.js';
import { ensureUser, type TestUser } from '../helpers/users.js';
import { waitFor } from '../service/harness.js';
import { batchRunDir, ClientDriver, startServerFor } from './driver.js';

const skip = needsDaemon();

// The server processes inherit this environment: a fixture machine with two packages and the
// FILECTL test plugin for writable controls.
const controlDir = tempDir('joulegate-batch-ctl-');
process.env.JOULEGATE_SYSROOT = join(FIXTURES, 'energy/intel-2s');
process.env.JOULEGATE_PLUGIN_PATH = FILE_CONTROLS_PLUGIN;
process.env.JOULEGATE_TEST_CONTROL_DIR = controlDir;

const TIME = { name: 'TIME', domain: DomainType.Board, idx: 0 };
const KNOB_A = { name: 'FILECTL::KNOB_A', domain: DomainType.Board, idx: 0 };
const KNOB_B1 = { name: 'FILECTL::KNOB_B', domain: DomainType.Package, idx: 1 };
const KNOB_C3 = { name: 'FILECTL::KNOB_C', domain: DomainType.Cpu, idx: 3 };

let alice: TestUser;
let mallory: TestUser;
const logs: string[] = [];
// In tests a server loads under tsx, at nice 10 (LOADING_NICE): on a busy machine that takes far
// longer than the daemon's 30 s, so the start-up wait is generous here.
const START_TIMEOUT_MS = 180_000;
const launcher = new BatchServerLauncher({
  log: (line) => logs.push(line),
  clientCheckMs: 250,
  startTimeoutMs: START_TIMEOUT_MS,
});

const runDir = batchRunDir;

/** Starts a server for `client` and admits it, as the daemon does once it has recorded it. */
const start = (
  dir: string,
  client: ClientDriver,
  user: TestUser,
  signals = [TIME],
  controls: typeof signals = [],
  by = launcher,
) => startServerFor(by, dir, client, user, signals, controls);

before(() => {
  if (skip) return; // the file's tests are skipped: no users to make
  alice = ensureUser('jg-batch-alice');
  mallory = ensureUser('jg-batch-mallory');
  initFileControls(controlDir, { KNOB_A: [3], KNOB_B: [5, 7], KNOB_C: [0, 0, 0, 11] });
});

describe('batch server with a client of another uid', { skip }, () => {
  test('reads batches of TIME and FILECTL signals into the shared buffer', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const server = await start(dir, client, alice, [TIME, KNOB_B1, KNOB_A]);
    assert.equal(server.serverKey, String(client.pid));

    // Files as GEOPM lays them out: owned by the client, 0600, 64-byte header + 3 doubles.
    const buffer = bufferPath(dir, server.serverKey, 'signal');
    const st = statSync(buffer);
    assert.equal(st.uid, alice.uid);
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal(st.size, 64 + 3 * 8);
    const bytes = readFileSync(buffer);
    const header = new Int32Array(bytes.buffer, bytes.byteOffset, 16);
    // glibc stores the mutex kind as PTHREAD_MUTEX_ERRORCHECK | process-shared bit (0x80).
    assert.ok(header.includes(0x82), 'header holds a process-shared error-checking mutex');
    for (const dir_ of ['in', 'out'] as const) {
      const fifo = statSync(fifoPath(dir, server.serverKey, dir_));
      assert.ok(fifo.isFIFO());
      assert.equal(fifo.uid, alice.uid);
      assert.equal(fifo.mode & 0o777, 0o600);
    }

    assert.deepEqual(await client.send(`connect ${dir} ${server.serverKey} 3 0`), { ok: true });
    const first = (await client.send('read')).values!;
    assert.equal(first.length, 3);
    assert.ok(first[0]! >= 0);
    assert.deepEqual(first.slice(1), [7, 3]);
    // Once connected, nobody else can find the files by name.
    assert.deepEqual(readdirSync(dir), []);

    writeFileSync(join(controlDir, 'KNOB_B.1'), '8\n');
    const second = (await client.send('read')).values!;
    assert.ok(second[0]! > first[0]!, 'TIME advances between batches');
    assert.deepEqual(second.slice(1), [8, 3]);

    assert.deepEqual(await client.send('quit'), { ok: true });
    await server.exited;
    assert.deepEqual(readdirSync(dir), []);
    assert.ok(
      logs.includes(
        `joulegated: batch server ${server.serverPid} of client ${client.pid} released (quit; 2 reads in JavaScript (FILECTL::KNOB_B has no native read))`,
      ),
      logs.join('\n'),
    );
  });

  test('a server whose client quit serves the next start of the same uid, with nothing of the last request; never another uid', async () => {
    // Its own launcher, whose window (how long a server is kept) outlasts tsx start-ups on a busy machine.
    const keeping = new BatchServerLauncher({
      log: (line) => logs.push(line),
      startTimeoutMs: START_TIMEOUT_MS,
      demandWindowMs: START_TIMEOUT_MS,
    });
    const dir = runDir();
    const [first, other, second] = await Promise.all([
      ClientDriver.start(alice),
      ClientDriver.start(mallory),
      ClientDriver.start(alice),
    ]);
    const used = await start(dir, first, alice, [TIME, KNOB_A], [KNOB_A], keeping);
    await first.send(`connect ${dir} ${used.serverKey} 2 1`);
    await first.send('read');
    await first.send('close'); // q, answered
    await used.exited;
    assert.ok(await waitFor(() => keeping.pool.kept === 1, START_TIMEOUT_MS), 'kept for alice');

    // Another uid never gets alice's server.
    const theirs = await start(dir, other, mallory, [TIME], [], keeping);
    assert.notEqual(theirs.serverPid, used.serverPid);
    await theirs.stop();
    assert.equal(keeping.pool.kept, 1, "alice's server is still kept");

    // Alice's next client gets it, with a request of its own: one signal, no control.
    const again = await start(dir, second, alice, [KNOB_B1], [], keeping);
    assert.equal(again.serverPid, used.serverPid);
    assert.equal(keeping.pool.kept, 0);
    assert.deepEqual(readdirSync(dir).sort(), [
      `batch-buffer-${second.pid}-signal`,
      `batch-status-${second.pid}-in`,
      `batch-status-${second.pid}-out`,
    ]);
    assert.deepEqual(await second.send(`connect ${dir} ${again.serverKey} 1 0`), { ok: true });
    assert.deepEqual((await second.send('read')).values, [readFileControl(controlDir, 'KNOB_B', 1)]);
    // A client that goes away without `q` lets the server go too.
    await second.kill();
    await again.exited;
    assert.ok(
      logs.includes(
        `joulegated: batch server ${again.serverPid} of client ${second.pid} released (client closed; 1 read in JavaScript (FILECTL::KNOB_B has no native read))`,
      ),
      logs.join('\n'),
    );
    await first.send('quit');
    await other.send('quit');
  });

  test('a server that served JOULEGATE_BATCH_CLIENTS_PER_SERVER clients is let go; the next start gets a fresh process', async () => {
    const twice = new BatchServerLauncher({
      log: (line) => logs.push(line),
      startTimeoutMs: START_TIMEOUT_MS,
      demandWindowMs: START_TIMEOUT_MS,
      clientsPerServer: 2,
    });
    const dir = runDir();
    const clients = await Promise.all([1, 2, 3].map(() => ClientDriver.start(alice)));
    const pids: number[] = [];
    for (const client of clients) {
      const server = await start(dir, client, alice, [TIME], [], twice);
      pids.push(server.serverPid);
      await client.send(`connect ${dir} ${server.serverKey} 1 0`);
      assert.ok((await client.send('read')).values![0]! >= 0);
      await client.send('quit');
      await server.exited;
      if (pids.length === 1)
        assert.ok(await waitFor(() => twice.pool.kept === 1, START_TIMEOUT_MS), 'kept after one');
    }
    assert.equal(pids[1], pids[0], "the second client gets the first one's server");
    assert.notEqual(pids[2], pids[0], 'after two clients the process is let go');
    assert.ok(await waitFor(() => !processExists(pids[0]!), START_TIMEOUT_MS), 'and it exits');
    assert.ok(
      !logs.some((l) => l.includes(`${pids[0]}`) && /killed|exit status [^0]|could not/.test(l)),
      logs.join('\n'),
    );
  });

  test('a kept server no start of its uid comes for is let go after the window: it exits, status 0', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(mallory);
    const server = await start(dir, client, mallory);
    await client.send(`connect ${dir} ${server.serverKey} 1 0`);
    await client.send('quit');
    await server.exited;
    assert.ok(await waitFor(() => launcher.pool.kept >= 1, START_TIMEOUT_MS), 'kept for mallory');
    // The launcher's window is 2 s; then the process sees its stdin end and exits.
    assert.ok(
      await waitFor(() => !processExists(server.serverPid), START_TIMEOUT_MS),
      'the kept server exits',
    );
    assert.equal(launcher.pool.kept, 0);
    assert.ok(
      !logs.some((l) => l.includes(`${server.serverPid}`) && /killed|exit status [^0]/.test(l)),
      logs.join('\n'),
    );
  });

  test('a signal that cannot be read is NaN in the batch, never a stale value', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const server = await start(dir, client, alice, [KNOB_A, TIME]);
    await client.send(`connect ${dir} ${server.serverKey} 2 0`);
    assert.equal((await client.send('read')).values![0], 3);
    writeFileSync(join(controlDir, 'KNOB_A.0'), 'garbage\n');
    try {
      const values = (await client.send('read')).values!;
      assert.equal(values[0], null);
      assert.ok(values[1]! > 0);
    } finally {
      writeFileSync(join(controlDir, 'KNOB_A.0'), '3\n');
    }
    await client.send('quit');
    await server.exited;
  });

  test('writes batches of controls; NaN leaves a control untouched', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const server = await start(dir, client, alice, [KNOB_A, KNOB_C3], [KNOB_A, KNOB_C3]);
    const controlBuffer = statSync(bufferPath(dir, server.serverKey, 'control'));
    assert.equal(controlBuffer.size, 64 + 2 * 8);
    assert.equal(controlBuffer.uid, alice.uid);
    await client.send(`connect ${dir} ${server.serverKey} 2 2`);
    const before = fileControlWrites(controlDir).length;

    assert.deepEqual(await client.send('write 42 NaN'), { ok: true });
    assert.equal(readFileControl(controlDir, 'KNOB_A', 0), 42);
    assert.equal(readFileControl(controlDir, 'KNOB_C', 3), 11);
    assert.deepEqual(fileControlWrites(controlDir).slice(before), ['FILECTL::KNOB_A 0 42']);
    assert.deepEqual((await client.send('read')).values, [42, 11]);

    await client.send('write 43 12');
    assert.deepEqual((await client.send('read')).values, [43, 12]);
    await client.send('quit');
    await server.exited;
    initFileControls(controlDir, { KNOB_A: [3], KNOB_C: [0, 0, 0, 11] });
  });

  test('a client killed while the server waits for it ends the server; no file is left', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const server = await start(dir, client, alice, [TIME], [KNOB_A]);
    await client.send(`connect ${dir} ${server.serverKey} 1 1`);
    await client.send('read');
    await client.kill();
    await server.exited;
    assert.deepEqual(readdirSync(dir), []);
    const mine = logs.filter((l) => l.includes(`${server.serverPid}`));
    assert.ok(
      mine.some((l) => l.includes('client closed')),
      mine.join('\n'),
    );
  });

  test('a client that dies before connecting: the launcher stops the server and removes its files', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const server = await start(dir, client, alice, [TIME], [KNOB_A]);
    assert.equal(readdirSync(dir).length, 4);
    await client.kill();
    await server.exited;
    assert.deepEqual(readdirSync(dir), []);
  });

  test('stop() ends a connected server; the client then gets a clear error', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const server = await start(dir, client, alice);
    await client.send(`connect ${dir} ${server.serverKey} 1 0`);
    await server.stop();
    await server.stop(); // twice is harmless
    assert.deepEqual(readdirSync(dir), []);
    const answer = await client.send('read');
    assert.match(answer.error ?? '', /batch server \d+ stopped; batch read failed/);
  });

  test('stop() ends a server still waiting for its client and removes the files', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const server = await start(dir, client, alice, [TIME], [KNOB_A]);
    await server.stop();
    assert.deepEqual(readdirSync(dir), []);
    const answer = await client.send(`connect ${dir} ${server.serverKey} 1 1`);
    assert.equal(answer.code, 'ENOENT');
  });

  test('a client of another uid can open neither the buffers nor the FIFOs', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const intruder = await ClientDriver.start(mallory);
    const server = await start(dir, client, alice, [TIME], [KNOB_A]);
    const key = server.serverKey;
    const paths = [
      bufferPath(dir, key, 'signal'),
      bufferPath(dir, key, 'control'),
      fifoPath(dir, key, 'in'),
      fifoPath(dir, key, 'out'),
    ];
    for (const path of paths) assert.equal((await intruder.send(`open ${path}`)).code, 'EACCES', path);
    // The owner can (the same call is not failing for an unrelated reason).
    assert.deepEqual(await client.send(`open ${paths[0]}`), { ok: true });
    await client.send(`connect ${dir} ${key} 1 1`);
    assert.equal((await client.send('read')).values!.length, 1);
    await client.send('quit');
    await server.exited;
    await intruder.send('quit');
  });

  test('a malformed message byte ends the server, not the launcher', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const server = await start(dir, client, alice);
    assert.deepEqual(await client.send(`raw ${dir} ${server.serverKey} ${'x'.charCodeAt(0)}`), { ok: true });
    await server.exited;
    assert.deepEqual(readdirSync(dir), []);
    assert.ok(logs.some((l) => l.includes(`${server.serverPid}`) && l.includes('unknown message byte 120')));
    // The launcher still serves the next request.
    const again = await start(dir, client, alice);
    await again.stop();
  });

  test('a request the server cannot push fails start() with the reason and leaves no file', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    await assert.rejects(start(dir, client, alice, [TIME, { name: 'NO_SUCH_SIGNAL', domain: 0, idx: 0 }]), {
      message: /batch server could not start: .*NO_SUCH_SIGNAL/,
    });
    await assert.rejects(start(dir, client, alice, [{ ...KNOB_B1, idx: 9 }]), {
      message: /batch server could not start: .*9/,
    });
    assert.deepEqual(readdirSync(dir), []);
  });

  test('a file already under the key is never reused (O_EXCL) nor removed', async () => {
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const planted = fifoPath(dir, String(client.pid), 'out');
    writeFileSync(planted, 'planted');
    await assert.rejects(start(dir, client, alice), { message: /batch server could not start: .*EEXIST/ });
    assert.deepEqual(readdirSync(dir), [`batch-status-${client.pid}-out`]);
    assert.equal(readFileSync(planted, 'utf8'), 'planted');
  });

  test('a server never admitted ends with the daemon that started it; no file is left', async () => {
    // The daemon admits a server once the session record naming it is written; a daemon that
    // dies before that must not leave the server running unwatched. Here a launcher in a
    // process of its own starts a server and is killed without admitting it.
    const dir = runDir();
    const client = await ClientDriver.start(alice);
    const launcherUrl = new URL('../../dist/service/batch-launcher.js', import.meta.url).href;
    const script = `
      const { BatchServerLauncher } = await import(${JSON.stringify(launcherUrl)});
      const server = await new BatchServerLauncher({ log: () => {}, startTimeoutMs: ${START_TIMEOUT_MS} }).start({
        runDir: ${JSON.stringify(dir)}, clientPid: ${client.pid}, clientUid: ${alice.uid},
        clientGid: ${alice.gid}, signals: [{ name: 'TIME', domain: 0, idx: 0 }], controls: [],
      });
      process.stdout.write(server.serverPid + '\\n', () => process.kill(process.pid, 'SIGKILL'));`;
    const daemon = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(daemon.signal, 'SIGKILL', daemon.stderr);
    const serverPid = Number(daemon.stdout.trim());
    assert.ok(serverPid > 0, daemon.stdout);
    assert.ok(await waitFor(() => !processExists(serverPid)), `server ${serverPid} still runs`);
    assert.deepEqual(readdirSync(dir), []);
    const answer = await client.send(`connect ${dir} ${client.pid} 1 0`);
    assert.equal(answer.code, 'ENOENT');
  });

  test('an empty request is refused', async () => {
    const client = await ClientDriver.start(alice);
    await assert.rejects(start(runDir(), client, alice, []), { message: /no signals or controls/ });
  });
});
