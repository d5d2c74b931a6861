import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The FILECTL test plugin (test/fixtures/plugins/file-controls.mjs): writable controls kept in
 * files. Load it with env JOULEGATE_PLUGIN_PATH=FILE_CONTROLS_PLUGIN and
 * JOULEGATE_TEST_CONTROL_DIR=<dir filled by initFileControls>.
 */
export const FILE_CONTROLS_PLUGIN = new URL('../fixtures/plugins/file-controls.mjs', import.meta.url)
  .pathname;

export type FileControlName = 'KNOB_A' | 'KNOB_B' | 'KNOB_C';

/** Writes one file per native index: KNOB_A (board), KNOB_B (per package), KNOB_C (per cpu). */
export function initFileControls(dir: string, values: Partial<Record<FileControlName, number[]>>): void {
  for (const [name, list] of Object.entries(values)) {
    list!.forEach((v, idx) => {
      writeFileSync(join(dir, `${name}.${idx}`), `${v}\n`);
    });
  }
}

/** Current value of one control file. */
export function readFileControl(dir: string, name: FileControlName, idx: number): number {
  return Number(readFileSync(join(dir, `${name}.${idx}`), 'utf8'));
}

/** Lines `FILECTL::<NAME> <idx> <value>` the plugin appended on each write, oldest first. */
export function fileControlWrites(dir: string): string[] {
  try {
    return readFileSync(join(dir, 'writes.log'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}
