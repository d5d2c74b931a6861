import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { after, test } from 'node:test';

/*
 * The tests mirror src/ (test/README.md): a test file sits in the test/ folder of the src/ folder
 * whose modules it tests, so every folder holding tests must exist under src/ too. The support
 * folders below hold no tests of a module of their own.
 */

const ROOT = new URL('../../', import.meta.url).pathname;
const SUPPORT = new Set(['helpers', 'fixtures', 'fakes', 'architecture']);
/**
 * Test folders whose src/ folder another part of issue 21 creates (src/attribution/). Once it
 * exists the entry is wrong, and the last test says to remove it.
 */
const PENDING_SOURCE_FOLDERS = new Set(['attribution']);

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return testFiles(path);
    return entry.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every test file under `root`/test whose folder has no counterpart under `root`/src. */
function testsWithoutSourceFolder(root: string, pending: ReadonlySet<string> = new Set()): string[] {
  const testRoot = join(root, 'test');
  return testFiles(testRoot)
    .map((file) => relative(testRoot, file))
    .filter((file) => {
      const folder = dirname(file);
      const top = folder.split('/')[0]!;
      if (SUPPORT.has(top) || pending.has(top)) return false;
      return folder === '.' || !existsSync(join(root, 'src', folder));
    });
}

const scratch = mkdtempSync(join(tmpdir(), 'jg-test-layout-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function tree(files: string[]): string {
  const root = mkdtempSync(join(scratch, 'tree-'));
  for (const file of files) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), '');
  }
  return root;
}

test('every folder of test/ holding tests is a folder of src/', () => {
  assert.deepEqual(testsWithoutSourceFolder(ROOT, PENDING_SOURCE_FOLDERS), []);
});

test('a test beside no src/ folder is found, at any depth; support folders are not layers', () => {
  const root = tree([
    'src/ipc/dbus/wire.ts',
    'test/ipc/dbus/wire.test.ts',
    'test/ipc/wire.test.ts',
    'test/gpu/nvml.test.ts',
    'test/ipc/batch/protocol.test.ts',
    'test/stray.test.ts',
    'test/helpers/a.test.ts',
    'test/fixtures/b/c.test.ts',
    'test/fakes/d.test.ts',
    'test/architecture/e.test.ts',
  ]);
  assert.deepEqual(testsWithoutSourceFolder(root).sort(), [
    'gpu/nvml.test.ts',
    'ipc/batch/protocol.test.ts',
    'stray.test.ts',
  ]);
});

test('the folders waiting for their src/ folder still wait', () => {
  for (const folder of PENDING_SOURCE_FOLDERS)
    assert.ok(
      !existsSync(join(ROOT, 'src', folder)),
      `src/${folder}/ exists now: remove "${folder}" from PENDING_SOURCE_FOLDERS in test/architecture/test-layout.test.ts`,
    );
});
