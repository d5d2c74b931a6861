import assert from 'node:assert/strict';
import { chmodSync, chownSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadPlugins, pluginPathEntries } from '../../src/backends/plugins.js';
import type { Backend } from '../../src/platform/backend.js';
import { DomainType } from '../../src/platform/domains.js';
import { PlatformIO } from '../../src/platform/platform-io.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { Topology } from '../../src/platform/topology.js';
import {
  FILE_CONTROLS_PLUGIN,
  fileControlWrites,
  initFileControls,
  readFileControl,
} from '../helpers/file-controls.js';
import { needsTestUsers } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { ensureUser } from '../helpers/users.js';

const asTestUsers = needsTestUsers();

// 2 packages x 2 cores, one CPU each: enough to see per-package and per-cpu files.
const topology = new Topology({
  cpus: [
    { cpu: 0, packageId: 0, coreId: 0 },
    { cpu: 1, packageId: 0, coreId: 1 },
    { cpu: 2, packageId: 1, coreId: 0 },
    { cpu: 3, packageId: 1, coreId: 1 },
  ],
  numa: [],
});

/** Only the plugins' backends, set up as loadPlatform would (built-ins are other tests' job). */
async function platformOf(backends: Backend[]): Promise<PlatformIO> {
  const pio = new PlatformIO(topology);
  for (const b of backends) {
    await b.setup({ sysroot: new Sysroot(''), topology });
    pio.register(b);
  }
  return pio;
}

function controlDir(): string {
  const dir = tempDir('joulegate-filectl-');
  initFileControls(dir, { KNOB_A: [7], KNOB_B: [10, 20], KNOB_C: [1, 2, 3, 4] });
  process.env.JOULEGATE_TEST_CONTROL_DIR = dir;
  return dir;
}

/** A private plugin directory with a copy of the fixture, so modes and owners can change. */
function pluginCopy(name = 'file-controls.mjs'): { dir: string; file: string } {
  const dir = join(tempDir('joulegate-plugins-'), 'plugins');
  mkdirSync(dir, { mode: 0o755 });
  const file = join(dir, name);
  copyFileSync(FILE_CONTROLS_PLUGIN, file);
  chmodSync(file, 0o644);
  return { dir, file };
}

function collectLog(): { lines: string[]; log: (l: string) => void } {
  const lines: string[] = [];
  return { lines, log: (l) => lines.push(l) };
}

test('JOULEGATE_PLUGIN_PATH is split on colons, empty entries dropped', () => {
  assert.deepEqual(pluginPathEntries('/a::/b/c.mjs:'), ['/a', '/b/c.mjs']);
  assert.deepEqual(pluginPathEntries(undefined), []);
});

test('a trustworthy plugin loads and its file controls read and write through PlatformIO', async () => {
  const dir = controlDir();
  const { lines, log } = collectLog();
  const { backends, refused } = await loadPlugins([pluginCopy().file], log);
  assert.deepEqual(refused, []);
  assert.deepEqual(lines, []);
  assert.deepEqual(
    backends.map((b) => b.name),
    ['FILECTL'],
  );
  const pio = await platformOf(backends);
  assert.deepEqual(pio.controlNames(), ['FILECTL::KNOB_A', 'FILECTL::KNOB_B', 'FILECTL::KNOB_C']);
  // Controls are readable as signals.
  assert.ok(pio.isValidSignal('FILECTL::KNOB_C'));
  assert.equal(await pio.readSignal('FILECTL::KNOB_A', DomainType.Board, 0), 7);
  assert.equal(await pio.readSignal('FILECTL::KNOB_B', DomainType.Package, 1), 20);
  // Board-level read of a per-cpu knob aggregates (average of 1..4).
  assert.equal(await pio.readSignal('FILECTL::KNOB_C', DomainType.Board, 0), 2.5);

  await pio.writeControl('FILECTL::KNOB_B', DomainType.Package, 0, 55);
  assert.equal(readFileControl(dir, 'KNOB_B', 0), 55);
  assert.equal(readFileControl(dir, 'KNOB_B', 1), 20);
  // A package-level write of a per-cpu knob fans out to the package's CPUs only.
  await pio.writeControl('FILECTL::KNOB_C', DomainType.Package, 1, 9);
  assert.deepEqual(
    [0, 1, 2, 3].map((i) => readFileControl(dir, 'KNOB_C', i)),
    [1, 2, 9, 9],
  );
  assert.deepEqual(fileControlWrites(dir), [
    'FILECTL::KNOB_B 0 55',
    'FILECTL::KNOB_C 2 9',
    'FILECTL::KNOB_C 3 9',
  ]);

  // Batch path: push, read, sample, adjust, write.
  const sig = pio.pushSignal('FILECTL::KNOB_A', DomainType.Board, 0);
  const ctl = pio.pushControl('FILECTL::KNOB_A', DomainType.Board, 0);
  await pio.readBatch();
  assert.equal(pio.sample(sig), 7);
  pio.adjust(ctl, 8.5);
  await pio.writeBatch();
  assert.equal(readFileControl(dir, 'KNOB_A', 0), 8.5);
});

test('a malformed control file is a read error naming the file, never 0', async () => {
  const dir = controlDir();
  writeFileSync(join(dir, 'KNOB_B.1'), 'garbage\n');
  const { backends } = await loadPlugins([pluginCopy().file], () => {});
  const pio = await platformOf(backends);
  await assert.rejects(
    pio.readSignal('FILECTL::KNOB_B', DomainType.Package, 1),
    /KNOB_B\.1 does not hold a number/,
  );
});

test('plugins in a directory entry load; a group-writable plugin is refused and named', async () => {
  controlDir();
  const { dir, file } = pluginCopy();
  const bad = join(dir, 'writable.mjs');
  copyFileSync(FILE_CONTROLS_PLUGIN, bad);
  chmodSync(bad, 0o664);
  const { lines, log } = collectLog();
  const { backends, refused } = await loadPlugins([dir], log);
  assert.deepEqual(
    backends.map((b) => b.name),
    ['FILECTL'],
  );
  assert.equal(refused.length, 1);
  assert.equal(refused[0]!.path, bad);
  assert.match(refused[0]!.reason, /is group-writable \(mode 0664\)/);
  assert.equal(lines.length, 1);
  assert.ok(lines[0]!.includes(bad) && lines[0]!.includes('group-writable'), lines[0]);
  assert.ok(!refused.some((r) => r.path === file));
});

test('a world-writable plugin file is refused', async () => {
  const { file } = pluginCopy();
  chmodSync(file, 0o646);
  const { backends, refused } = await loadPlugins([file], () => {});
  assert.deepEqual(backends, []);
  assert.match(refused[0]!.reason, /world-writable/);
});

test('a plugin in a group-writable directory is refused', async () => {
  const { dir, file } = pluginCopy();
  chmodSync(dir, 0o775);
  const { backends, refused } = await loadPlugins([file], () => {});
  assert.deepEqual(backends, []);
  assert.match(refused[0]!.reason, new RegExp(`directory ${dir} is group-writable`));
});

test('a plugin owned by another user is refused, even if its mode is strict', {
  skip: asTestUsers,
}, async () => {
  const user = ensureUser('jg-e2-plugin');
  const { file } = pluginCopy();
  chownSync(file, user.uid, user.gid);
  const { lines, log } = collectLog();
  const { backends, refused } = await loadPlugins([file], log);
  assert.deepEqual(backends, []);
  assert.match(refused[0]!.reason, new RegExp(`is owned by uid ${user.uid}, not root`));
  assert.ok(lines[0]!.includes(file));
});

test('a plugin reached through a symlink is judged by its real file', { skip: asTestUsers }, async () => {
  const user = ensureUser('jg-e2-plugin');
  const { dir, file } = pluginCopy();
  chownSync(file, user.uid, user.gid);
  const link = join(tempDir('joulegate-link-'), 'link.mjs');
  const { symlinkSync } = await import('node:fs');
  symlinkSync(file, link);
  const { refused } = await loadPlugins([link], () => {});
  assert.equal(refused[0]!.path, link);
  assert.ok(refused[0]!.reason.startsWith(`${dir}/`), refused[0]!.reason);
});

test('a module without a factory, a factory returning junk, or a missing path is refused, others load', async () => {
  controlDir();
  const { dir } = pluginCopy('b-good.mjs');
  writeFileSync(join(dir, 'a-noexport.mjs'), 'export const x = 1;\n', { mode: 0o644 });
  writeFileSync(join(dir, 'c-junk.mjs'), 'export default () => ({ name: 42 });\n', { mode: 0o644 });
  writeFileSync(join(dir, 'd-throws.mjs'), 'export default () => { throw new Error("no hardware"); };\n', {
    mode: 0o644,
  });
  writeFileSync(join(dir, 'notes.txt'), 'not a plugin\n', { mode: 0o644 });
  const { backends, refused } = await loadPlugins([dir, join(dir, 'missing.mjs')], () => {});
  assert.deepEqual(
    backends.map((b) => b.name),
    ['FILECTL'],
  );
  const reasons = Object.fromEntries(refused.map((r) => [r.path.slice(dir.length + 1), r.reason]));
  assert.deepEqual(Object.keys(reasons).sort(), [
    'a-noexport.mjs',
    'c-junk.mjs',
    'd-throws.mjs',
    'missing.mjs',
  ]);
  assert.match(reasons['a-noexport.mjs']!, /default export is not a function/);
  assert.match(reasons['c-junk.mjs']!, /is not a Backend/);
  assert.match(reasons['d-throws.mjs']!, /no hardware/);
  assert.match(reasons['missing.mjs']!, /ENOENT/);
});

test('without JOULEGATE_TEST_CONTROL_DIR the fixture says what is missing', async () => {
  const saved = process.env.JOULEGATE_TEST_CONTROL_DIR;
  delete process.env.JOULEGATE_TEST_CONTROL_DIR;
  try {
    const { backends, refused } = await loadPlugins([pluginCopy().file], () => {});
    assert.deepEqual(backends, []);
    assert.match(refused[0]!.reason, /JOULEGATE_TEST_CONTROL_DIR is not set/);
  } finally {
    process.env.JOULEGATE_TEST_CONTROL_DIR = saved;
  }
});
