import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { GeopmClient, ServiceError } from '../../src/ipc/geopm-client.js';
import { DAEMON, run } from '../helpers/cli.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { BUS_NAME, ServiceHarness } from '../service/harness.js';

const skip = needsDaemon();

// A second daemon takes the bus name before it touches its run dir: while another process owns
// the name it exits with one line, whatever run dir it was given, having changed nothing there.

const h = new ServiceHarness();
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());

/** Every entry under `dir` with its mode and size (the run dir's state as a value). */
function snapshot(dir: string): string[] {
  const entries: string[] = [];
  const walk = (path: string, name: string) => {
    const st = statSync(path);
    entries.push(`${name} ${(st.mode & 0o7777).toString(8)} ${st.isDirectory() ? 'dir' : st.size}`);
    if (st.isDirectory())
      for (const child of readdirSync(path).sort()) walk(join(path, child), `${name}/${child}`);
  };
  walk(dir, '.');
  return entries;
}

test('a second daemon on another run dir exits with one line while the bus name is owned, touching nothing', {
  skip,
}, async () => {
  // A run dir a starting daemon would move aside (mode 0777) and then fill (topology cache).
  const parent = tempDir('jg-second-daemon-');
  const runDir = join(parent, 'geopm');
  mkdirSync(runDir);
  chmodSync(runDir, 0o777);
  writeFileSync(join(runDir, 'left-by-someone'), 'x');
  const before = snapshot(parent);

  const second = await run(process.execPath, [DAEMON], {
    env: { ...h.env(), JOULEGATE_RUN_PATH: runDir },
    timeoutMs: 60_000,
  });
  assert.equal(second.code, 1, second.stderr);
  assert.equal(
    second.stderr,
    `joulegated: ${BUS_NAME} is already owned by pid ${h.daemon!.pid} on ${h.bus.address}; exiting\n`,
  );
  assert.deepEqual(snapshot(parent), before);
  // The first daemon serves on.
  const [info] = await h.client([{ call: 'topoGetCache' }]);
  assert.equal(info!.ok, true, info!.message);
  assert.equal(h.daemon!.exitCode, null);
});

test('calls made as soon as the daemon owns its name wait until it is ready, then succeed', {
  skip,
}, async () => {
  assert.equal(await h.stopDaemon(), 0);
  const client = await GeopmClient.connect({ address: h.bus.address, busName: BUS_NAME });
  try {
    const starting = h.startDaemon();
    // The first call the bus delivers (not refused as ServiceUnknown) gets the ready answer.
    for (;;) {
      try {
        await client.platformOpenSession();
        break;
      } catch (err) {
        if (!(err instanceof ServiceError) || err.dbusName !== 'org.freedesktop.DBus.Error.ServiceUnknown')
          throw err;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
    assert.equal(typeof (await client.platformReadSignal('FILECTL::COUNTER', 0, 0)), 'number');
    await client.platformCloseSession();
    await starting;
  } finally {
    client.close();
  }
});
