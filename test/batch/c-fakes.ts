import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/tmp.js';

const FAKES = new URL('../fakes/', import.meta.url).pathname;
let bin: string | undefined;

/** Compiles test/fakes/<name>.c into a directory test users can run it from; returns the binary. */
export function compileFake(name: string): string {
  if (!bin) {
    bin = tempDir('jg-batch-fakes-bin-');
    chmodSync(bin, 0o755);
  }
  const out = join(bin, name);
  execFileSync('gcc', ['-O1', '-Wall', '-Werror', '-o', out, join(FAKES, `${name}.c`), '-lm'], {
    stdio: 'pipe',
  });
  return out;
}
