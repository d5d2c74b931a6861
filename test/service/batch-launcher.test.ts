import assert from 'node:assert/strict';
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DomainType } from '../../src/platform/domains.js';
import { BatchServerLauncher } from '../../src/service/batch-launcher.js';
import { childPids } from '../helpers/proc-stat.js';
import { needsDaemon } from '../helpers/requirements.js';
import { FIXTURES, tempDir } from '../helpers/tmp.js';
import { waitFor } from './harness.js';

// The spare pool (docs/batch.md, "The spare pool"): real server processes, under tsx.
const skip = needsDaemon();
process.env.JOULEGATE_SYSROOT = join(FIXTURES, 'energy/intel-2s');

const TIME = { name: 'TIME', domain: DomainType.Board, idx: 0 };
// Servers load under tsx at nice 10: on a busy machine that takes long.
const TIMEOUT_MS = 180_000;

/** This process's batch server children: the pool's spares once every started server stopped. */
function serverChildren(): number[] {
  return childPids(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('batch-server');
    } catch {
      return false; // exited meanwhile
    }
  });
}

after(async () => {
  // Spares see their stdin close when this process ends; none may outlive the file.
  for (const pid of serverChildren()) process.kill(pid, 'SIGKILL');
  assert.ok(await waitFor(() => serverChildren().length === 0, 30_000), 'every server gone');
});

async function startAndStop(launcher: BatchServerLauncher, runDir: string): Promise<void> {
  const server = await launcher.start({
    runDir,
    clientPid: process.pid,
    clientUid: process.getuid!(),
    clientGid: process.getgid!(),
    signals: [TIME],
    controls: [],
  });
  await server.stop();
}

function runDir(): string {
  const dir = tempDir('joulegate-pool-run-');
  chmodSync(dir, 0o711);
  return dir;
}

test('the pool grows to the starts of a burst and shrinks back to JOULEGATE_BATCH_SPARES', {
  skip,
}, async () => {
  const logs: string[] = [];
  const launcher = new BatchServerLauncher({
    log: (line) => logs.push(line),
    spares: 1,
    maxSpares: 3,
    // Long enough to hold four starts of servers loading under tsx on a busy machine.
    demandWindowMs: 60_000,
    startTimeoutMs: TIMEOUT_MS,
  });
  launcher.warm();
  assert.ok(await waitFor(() => serverChildren().length === 1, TIMEOUT_MS), 'one spare loading');
  const dir = runDir();
  // Four starts back to back: the window holds them, the pool follows up to its most, 3. (The
  // pool's own count: under load its spares may still be loading, or waiting for a place to.)
  for (let i = 0; i < 4; i++) await startAndStop(launcher, dir);
  assert.ok(await waitFor(() => launcher.pool.spares === 3, TIMEOUT_MS), 'three spares after the burst');
  // Once the window passes without a start, the extra spares are let go (loaded ones exit with
  // status 0, loading ones are ended) and their processes are gone.
  assert.ok(await waitFor(() => launcher.pool.spares === 1, TIMEOUT_MS), 'back to one spare');
  assert.ok(await waitFor(() => serverChildren().length === 1, TIMEOUT_MS), 'one spare process left');
  assert.deepEqual(
    logs.filter((l) => /spare .*(failed|killed|exit status [^0])/.test(l)),
    [],
    'no spare failed or was killed',
  );
});

test('with JOULEGATE_BATCH_SPARES=0 there is no pool: each start loads its own process', {
  skip,
}, async () => {
  const before = serverChildren().length;
  const launcher = new BatchServerLauncher({
    log: () => {},
    spares: 0,
    maxSpares: 3,
    // Long enough to hold four starts of servers loading under tsx on a busy machine.
    demandWindowMs: 30_000,
    startTimeoutMs: TIMEOUT_MS,
  });
  const dir = runDir();
  for (let i = 0; i < 2; i++) await startAndStop(launcher, dir);
  // A spare would be spawned right after the answer; give it the time a spawn takes to show.
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(serverChildren().length, before);
});
