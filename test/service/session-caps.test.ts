import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { loadPlugins } from '../../src/backends/plugins.js';
import { PermissionError } from '../../src/platform/errors.js';
import { processIdentity } from '../../src/platform/process.js';
import { AccessLists } from '../../src/service/access/index.js';
import type { Caller } from '../../src/service/caller-access.js';
import { LIMITS } from '../../src/service/limits.js';
import { GeopmService } from '../../src/service/service.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { ensureUser } from '../helpers/users.js';
import { ServiceHarness } from './harness.js';

const skip = needsDaemon();

// Each session keeps a copy of its access lists, so one user's sessions are capped: the user
// gets a clear refusal past the cap, other users are unaffected, and closing frees room. Real
// processes of a real user (sleeps) against the service in this process.

const h = new ServiceHarness();
await whenMet(skip, () => h.setup());
const dir = tempDir('jg-caps-');
const runDir = join(dir, 'run');
mkdirSync(runDir, { mode: 0o711 });
process.env.JOULEGATE_TEST_CONTROL_DIR = h.controlDir;
process.env.JOULEGATE_SYSROOT = h.sysroot;
const plugins = await whenMet(skip, () => loadPlugins([h.pluginDir], () => {}));
const pio = await whenMet(skip, () => loadPlatform({ extra: plugins.backends }));
const service = whenMet(
  skip,
  () =>
    new GeopmService({
      runDir,
      pio,
      access: new AccessLists({ configDir: join(dir, 'config'), log: () => {} }),
      log: () => {},
      pollMs: 60_000,
    }),
);
await whenMet(skip, () => service.start());
const user = whenMet(skip, () => ensureUser('jgsvc_caps'));
const other = whenMet(skip, () => ensureUser('jgsvc_caps2'));

const sleepers: ChildProcess[] = [];
after(async () => {
  if (skip) return;
  for (const p of sleepers) p.kill('SIGKILL');
  await service.shutdown();
});

/** A process of `uid` to open sessions for. */
function processOf(uid: number, gid: number): Caller {
  const proc = spawn('sleep', ['600'], { uid, gid, stdio: 'ignore' });
  sleepers.push(proc);
  const ident = processIdentity(proc.pid!)!;
  return { pid: ident.pid, uid: ident.uid, startTicks: ident.startTicks };
}

test(`one user's open sessions stop at ${LIMITS.sessionsPerUser}; other users are unaffected`, {
  skip,
}, async () => {
  const open = (c: Caller) => service.handlers.PlatformOpenSession(c, []);
  const mine = Array.from({ length: LIMITS.sessionsPerUser }, () => processOf(user.uid, user.gid));
  for (const c of mine) await open(c);
  // A further process of the same user is refused, naming the cap.
  const extra = processOf(user.uid, user.gid);
  await assert.rejects(open(extra), (err: Error) => {
    assert.ok(err instanceof PermissionError);
    assert.match(
      err.message,
      new RegExp(`uid ${user.uid} already has ${LIMITS.sessionsPerUser} sessions open`),
    );
    return true;
  });
  // Another reference to an open session costs nothing and is still allowed.
  await open(mine[0]!);
  // Another user opens sessions as usual.
  await open(processOf(other.uid, other.gid));
  // Closing one frees room for the next.
  await service.handlers.PlatformCloseSessionAdmin(mine[1]!, [mine[1]!.pid]);
  await open(extra);
  // Session files are written off the request path: wait (bounded) for them to catch up.
  const sessionFiles = () => readdirSync(runDir).filter((f) => f.startsWith('session-')).length;
  for (let i = 0; i < 100 && sessionFiles() !== LIMITS.sessionsPerUser + 1; i++)
    await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(sessionFiles(), LIMITS.sessionsPerUser + 1);
});
