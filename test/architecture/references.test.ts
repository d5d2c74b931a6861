import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';

// Reference facts live in docs/reference/ (docs/reference/README.md): nothing in the repository
// may point at notes kept outside it, which a clone does not have. The pattern is assembled so
// that this file does not match it itself.
const NOTES_DIR = ['shared', 'reference'].join('/');
const OUTSIDE_NOTES = new RegExp(String.raw`${NOTES_DIR}|\.\.\/shared\/`);

const ROOT = new URL('../../', import.meta.url).pathname;
/** Build output and installed packages: not the repository's own text. */
const NOT_OURS = new Set(['.git', 'node_modules', 'dist']);

/** The repository's files: git's tracked and not-ignored files, or every file when git has none. */
function repositoryFiles(root: string): string[] {
  const git = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (git.status === 0 && git.stdout !== '') return git.stdout.split('\0').filter(Boolean);
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      if (NOT_OURS.has(entry)) continue;
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else out.push(relative(root, path));
    }
  };
  walk(root);
  return out;
}

/** "path:line" of every line under `root` that points at notes outside the repository. */
function citationsOutside(root: string): string[] {
  const found: string[] = [];
  for (const file of repositoryFiles(root)) {
    let text: string;
    try {
      text = readFileSync(join(root, file), 'utf8');
    } catch {
      continue; // listed by git but deleted in the working tree
    }
    if (!OUTSIDE_NOTES.test(text)) continue;
    text.split('\n').forEach((line, i) => {
      if (OUTSIDE_NOTES.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

const scratch = mkdtempSync(join(tmpdir(), 'jg-references-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('no file of the repository points at reference notes outside it', () => {
  assert.deepEqual(citationsOutside(ROOT), []);
});

test('a planted citation is found, with its file and line', () => {
  mkdirSync(join(scratch, 'src'));
  writeFileSync(join(scratch, 'src', 'clean.ts'), '// facts: docs/reference/geopm-service.md\n');
  const up = ['..', 'shared', 'notes.md'].join('/');
  writeFileSync(join(scratch, 'src', 'planted.ts'), `/*\n * the layout (${NOTES_DIR}/geopm.md §4)\n */\n`);
  writeFileSync(join(scratch, 'notes.md'), `see ${up}\n`);
  assert.deepEqual(citationsOutside(scratch).sort(), [
    `notes.md:1: see ${up}`,
    `src/planted.ts:2: * the layout (${NOTES_DIR}/geopm.md §4)`,
  ]);
});
