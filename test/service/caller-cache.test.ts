import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { loadPlugins } from '../../src/backends/plugins.js';
import { DBusConnection } from '../../src/ipc/dbus/connection.js';
import { GeopmClient } from '../../src/ipc/geopm-client.js';
import { AccessLists } from '../../src/service/access/index.js';
import { Dispatcher } from '../../src/service/dispatcher.js';
import { GeopmService } from '../../src/service/service.js';
import { spyOnFs } from '../helpers/fs-spy.js';
import { openPidfds } from '../helpers/proc-stat.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { INITIAL_CONTROLS, ServiceHarness, waitFor } from './harness.js';

const skip = needsDaemon();

// The daemon looks each connection's caller up once, keeps it while the connection lives and
// forgets it when the bus announces the connection gone; calls on a known connection read
// nothing from /proc. The service runs in this process (so its cache can be watched) on a
// private bus, with real client connections.

const h = new ServiceHarness();
await whenMet(skip, () => h.setup());
const dir = tempDir('jg-cache-');
const runDir = join(dir, 'run');
mkdirSync(runDir, { mode: 0o711 });
for (const [file, value] of Object.entries(INITIAL_CONTROLS))
  writeFileSync(join(h.controlDir, file), `${value}\n`);
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
      // The liveness poll reads /proc by design; kept out of the window this test watches.
      pollMs: 3_600_000,
    }),
);
await whenMet(skip, () => service.start());
const daemon = await whenMet(skip, () => DBusConnection.connect(h.bus.address));
const dispatcher = whenMet(skip, () => new Dispatcher(daemon, service));
const BUS_NAME = 'io.github.geopm.cachetest';
await whenMet(skip, () => daemon.requestName(BUS_NAME));
after(async () => {
  if (skip) return;
  await service.shutdown();
  daemon.close();
});

const connect = () => GeopmClient.connect({ address: h.bus.address, busName: BUS_NAME });

test('each connection is looked up once and forgotten when it disconnects', { skip }, async () => {
  const before = dispatcher.cachedCallers;
  const pidfdsBefore = openPidfds();
  const clients = await Promise.all(Array.from({ length: 50 }, connect));
  await Promise.all(clients.map((c) => c.topoGetCache()));
  await Promise.all(clients.map((c) => c.platformGetAllAccess()));
  assert.equal(dispatcher.cachedCallers, before + 50);
  // Each caller is pinned by a pidfd on its process (all of them this one), closed when forgotten.
  assert.equal(openPidfds(), pidfdsBefore + 50);
  for (const c of clients) c.close();
  assert.ok(
    await waitFor(() => dispatcher.cachedCallers === before && openPidfds() === pidfdsBefore, 5000),
    `${dispatcher.cachedCallers} callers still cached, ${openPidfds() - pidfdsBefore} pidfds still open after their connections closed`,
  );
});

test('a session costs four /proc reads to open and one to close, and its reads none', { skip }, async () => {
  const client = await connect();
  // A process's files under /proc opened either way the daemon reads files, by their name (the
  // boot time in /proc/stat is read once per daemon, not per client).
  const procFilesDuring = async (fn: () => Promise<unknown>) => {
    let opened: unknown[] = [];
    const read = await spyOnFs('readFileSync', async () => {
      opened = await spyOnFs('openSync', fn);
    });
    return [...read, ...opened]
      .filter((path) => /^\/proc\/\d+\//.test(String(path)))
      .map((path) => String(path).split('/').pop());
  };
  // The first call identifies the caller (its status and stat, with a pidfd opened before them);
  // admin rights and the session's owner are then a status read and a poll of that pidfd each,
  // and the session keeps a copy of the pidfd, so its reads and liveness checks read nothing.
  const opening = await procFilesDuring(() => client.platformOpenSession());
  const reading = await procFilesDuring(async () => {
    for (let i = 0; i < 100; i++) await client.platformReadSignal('FILECTL::COUNTER', 0, 0);
  });
  const closing = await procFilesDuring(() => client.platformCloseSession());
  client.close();
  assert.deepEqual(opening, ['status', 'stat', 'status', 'status']);
  assert.deepEqual(reading, []);
  assert.deepEqual(closing, ['status']);
});
