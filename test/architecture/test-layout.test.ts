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

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return testFiles(path);
    return entry.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every test file under `root`/test whose folder has no counterpart under `root`/src. */
function testsWithoutSourceFolder(root: string): string[] {
  const testRoot = join(root, 'test');
  return testFiles(testRoot)
    .map((file) => relative(testRoot, file))
    .filter((file) => {
      const folder = dirname(file);
      const top = folder.split('/')[0]!;
      if (SUPPORT.has(top)) return false;
      // A test at the top tests a top-level module of src/ (index.ts), nothing else.
      if (folder === '.') return !existsSync(join(root, 'src', file.replace(/\.test\.ts$/, '.ts')));
      return !existsSync(join(root, 'src', folder));
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
  assert.deepEqual(testsWithoutSourceFolder(ROOT), []);
});

test('a test beside no src/ folder is found, at any depth; support folders are not layers', () => {
  const root = tree([
    'src/ipc/dbus/wire.ts',
    'src/index.ts',
    'test/index.test.ts',
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
