import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';
import { unpackTtar } from './ttar.js';

/** Real sysfs/procfs captures other projects publish, vendored under test/fixtures/captures. */
export const CAPTURES_DIR = new URL('../fixtures/captures/', import.meta.url).pathname;

export type CaptureName = 'node_exporter' | 'procfs';

/**
 * A sysroot (`sys/`, `proc/`) unpacked from one capture into a fresh temp dir, for
 * JOULEGATE_SYSROOT. Each call unpacks anew, so a test may change its copy.
 */
export function captureSysroot(name: CaptureName): string {
  const root = tempDir(`jg-capture-${name}-`);
  if (name === 'node_exporter') {
    unpackTtar(join(CAPTURES_DIR, 'node_exporter/sys.ttar'), root);
    cpSync(join(CAPTURES_DIR, 'node_exporter/proc'), join(root, 'proc'), {
      recursive: true,
      verbatimSymlinks: true,
    });
  } else {
    const unpacked = join(root, 'unpacked');
    mkdirSync(unpacked);
    unpackTtar(join(CAPTURES_DIR, 'procfs/fixtures.ttar'), unpacked);
    cpSync(join(unpacked, 'fixtures'), root, { recursive: true, verbatimSymlinks: true });
  }
  return root;
}
