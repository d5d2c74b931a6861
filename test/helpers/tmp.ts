import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

const made: string[] = [];
after(() => {
  if (process.env.JOULEGATE_KEEP_TMP) return;
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A fresh temp dir, removed when the test file ends. */
export function tempDir(prefix = 'joulegate-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;

/** Copies test/fixtures/<name> into a temp dir (tests may change counters there). */
export function copyFixture(name: string): string {
  const dir = tempDir(`joulegate-${name.replace(/\W/g, '_')}-`);
  cpSync(join(FIXTURES, name), dir, { recursive: true });
  return dir;
}
