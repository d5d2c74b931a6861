import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package version, from the nearest joulegate package.json above this module: the same
 * code runs from src/ (tests), dist/ and the bundle in dist/app/.
 */
function readVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (pkg.name === 'joulegate') return String(pkg.version);
    } catch {
      // no (readable) package.json here: keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) return '0.0.0';
    dir = parent;
  }
}

export const VERSION = readVersion();
