import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The joulegate package's directory and package.json, found from this module upwards: the same
 * code runs from src/ (tests), dist/ and the bundles in dist/app/.
 */
function findPackage(): { root: string; version: string } | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (pkg.name === 'joulegate') return { root: dir, version: String(pkg.version) };
    } catch {
      // no (readable) package.json here: keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export const PACKAGE = findPackage();
