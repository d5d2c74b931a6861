import assert from 'node:assert/strict';
import { chmodSync, chownSync, copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { FILE_CONTROLS_PLUGIN, initFileControls, readFileControl } from '../helpers/file-controls.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { FIXTURES, tempDir } from '../helpers/tmp.js';
import { asUser, ensureUser } from '../helpers/users.js';
import { ServiceHarness } from '../service/harness.js';

const skip = needsDaemon();

// JOULEGATE_PLUGIN_PATH in the CLI: every command that builds a PlatformIO loads the plugins
// with the daemon's ownership rule, reports a refused one, and a non-admin whose access list
// lacks a name is told so rather than shown a local backend's "permission denied".
const h = new ServiceHarness();
await whenMet(skip, () => h.setup());
chmodSync(h.sysroot, 0o755);
await whenMet(skip, () => h.startDaemon());
await whenMet(skip, () =>
  h.client([
    { call: 'platformSetGroupAccess', args: ['', ['TIME', 'FILECTL::COUNTER'], ['FILECTL::LIMIT']] },
  ]),
);
const user = whenMet(skip, () => ensureUser('jg-cli-plugins'));
const other = whenMet(skip, () => ensureUser('jg-cli-plugins2'));

/** A root-owned directory readable by everyone, holding a copy of `plugin`. */
function pluginDir(plugin: string, name = 'plugin.mjs'): { dir: string; file: string } {
  const top = tempDir('jg-cli-plugins-');
  chmodSync(top, 0o755);
  const dir = join(top, 'plugins');
  mkdirSync(dir, { mode: 0o755 });
  const file = join(dir, name);
  copyFileSync(plugin, file);
  chmodSync(file, 0o644);
  return { dir, file };
}

/** FILECTL (test/fixtures/plugins) controls in a directory `owner` may use. */
function knobs(owner?: { uid: number; gid: number }): string {
  const dir = tempDir('jg-cli-knobs-');
  initFileControls(dir, { KNOB_A: [7], KNOB_B: [10, 20] });
  if (owner) {
    chownSync(dir, owner.uid, owner.gid);
    for (const f of ['KNOB_A.0', 'KNOB_B.0', 'KNOB_B.1']) chownSync(join(dir, f), owner.uid, owner.gid);
  }
  return dir;
}

/** `joulegate ...` as the test user, with the bus of the harness and `env`. */
function asTestUser(args: string[], env: Record<string, string>) {
  const vars = Object.entries({
    DBUS_SYSTEM_BUS_ADDRESS: h.bus.address,
    JOULEGATE_BUS_NAME: 'io.github.geopm',
    JOULEGATE_RUN_PATH: h.runDir,
    JOULEGATE_SYSROOT: h.sysroot,
    PATH: '/usr/bin:/bin',
    ...env,
  }).map(([k, v]) => `${k}=${v}`);
  return runCli(args, { prefix: [...asUser(user), 'env', ...vars], timeoutMs: 60_000 });
}

test('admin: read, write and session load JOULEGATE_PLUGIN_PATH plugins', { skip }, async () => {
  const { dir } = pluginDir(FILE_CONTROLS_PLUGIN);
  const controls = knobs();
  // The harness's node: 2 packages.
  const env = {
    JOULEGATE_PLUGIN_PATH: dir,
    JOULEGATE_TEST_CONTROL_DIR: controls,
    JOULEGATE_SYSROOT: h.sysroot,
  };
  const read = await runCli(['read', 'FILECTL::KNOB_A', 'board', '0'], { env });
  assert.equal(read.code, 0, read.stderr);
  assert.equal(read.stdout, '7\n');
  const write = await runCli(['write', 'FILECTL::KNOB_B', 'package', '1', '25'], { env });
  assert.equal(write.code, 0, write.stderr);
  assert.equal(readFileControl(controls, 'KNOB_B', 1), 25);
  const session = await runCli(['session'], { env, input: 'FILECTL::KNOB_B board 0\n' });
  assert.equal(session.code, 0, session.stderr);
  assert.equal(session.stdout, '"FILECTL::KNOB_B"\n17.5\n'); // the mean of both packages' 10 and 25
});

test('a refused plugin is a warning line and a diagnostic, not silently dropped', { skip }, async () => {
  const { dir, file } = pluginDir(FILE_CONTROLS_PLUGIN);
  chmodSync(file, 0o664);
  const env = { JOULEGATE_PLUGIN_PATH: dir, JOULEGATE_TEST_CONTROL_DIR: knobs() };
  const warning = `Warning: <joulegate>: refusing plugin ${file}: ${file} is group-writable (mode 0664)\n`;
  const read = await runCli(['read', 'FILECTL::KNOB_A', 'board', '0'], { env });
  assert.notEqual(read.code, 0);
  assert.equal(read.stderr, `${warning}Error: cannot read signal: no support for signal FILECTL::KNOB_A\n`);
  const sensors = await runCli(['sensors', '--json'], { env });
  assert.equal(sensors.code, 0, sensors.stderr);
  assert.equal(sensors.stderr, warning);
  const { unavailable } = JSON.parse(sensors.stdout) as {
    unavailable: { backend: string; reason: string }[];
  };
  assert.deepEqual(
    unavailable.find((d) => d.backend === `plugin ${file}`),
    { backend: `plugin ${file}`, reason: `${file} is group-writable (mode 0664)` },
  );
});

test('non-admin: a plugin it may trust loads next to the daemon; one owned by another user is refused', {
  skip,
}, async () => {
  const { dir } = pluginDir(FILE_CONTROLS_PLUGIN);
  const env = { JOULEGATE_PLUGIN_PATH: dir, JOULEGATE_TEST_CONTROL_DIR: knobs(user) };
  const read = await asTestUser(['read', 'FILECTL::KNOB_B', 'package', '1'], env);
  assert.equal(read.code, 0, read.stderr);
  assert.equal(read.stdout, '20\n');
  assert.equal(read.stderr, '');
  // The daemon's names are there too (SERVICE): TIME from the daemon, COUNTER from its plugin.
  const counter = await asTestUser(['read', 'FILECTL::COUNTER', 'board', '0'], env);
  assert.equal(counter.stdout, '42\n', counter.stderr);

  const foreign = pluginDir(FILE_CONTROLS_PLUGIN);
  chownSync(foreign.file, other.uid, other.gid);
  const refused = await asTestUser(['read', 'TIME', 'board', '0'], {
    JOULEGATE_PLUGIN_PATH: foreign.dir,
    JOULEGATE_TEST_CONTROL_DIR: knobs(user),
  });
  assert.equal(refused.code, 0, refused.stderr);
  assert.equal(
    refused.stderr,
    `Warning: <joulegate>: refusing plugin ${foreign.file}: ${foreign.file} is owned by uid ${other.uid}, ` +
      `not root or the loading user (uid ${user.uid})\n`,
  );
});

test('non-admin: a name the daemon has but the access list lacks is reported as such', { skip }, async () => {
  // The daemon's own plugin, loadable by the user, over the daemon's root-only control files:
  // locally the write can only fail with "permission denied"; the real reason is the list.
  const { dir } = pluginDir(join(FIXTURES, 'service/file-controls-plugin.mjs'));
  const withPlugin = { JOULEGATE_PLUGIN_PATH: dir, JOULEGATE_TEST_CONTROL_DIR: h.controlDir };
  for (const env of [withPlugin, {}]) {
    const write = await asTestUser(['write', 'FILECTL::MODE', 'board', '0', '2'], env);
    assert.equal(write.code, 22, write.stderr);
    assert.equal(
      write.stderr,
      'Error: cannot write control: control FILECTL::MODE is not in your access list; ' +
        'ask your admin to add it (joulegate access -w -c)\n',
    );
    const read = await asTestUser(['read', 'SERVICE::FILECTL::MODE', 'board', '0'], env);
    assert.equal(
      read.stderr,
      'Error: cannot read signal: signal SERVICE::FILECTL::MODE is not in your access list; ' +
        'ask your admin to add it (joulegate access -w)\n',
    );
  }
  assert.equal(h.control('FILECTL-MODE-0'), '1');
  // A name nobody has keeps the plain error.
  const unknown = await asTestUser(['write', 'NO_SUCH_CONTROL', 'board', '0', '1'], {});
  assert.equal(unknown.stderr, 'Error: cannot write control: no support for control NO_SUCH_CONTROL\n');
});
