#!/usr/bin/env node
// Fails when a module under src/ imports against the grain of the layers (docs/architecture.md):
//   platform → ipc → backends → service | batch | monitor → cluster → report → cli → app
// A module may import its own folder and any lower layer; folders on one level (service, batch,
// monitor) may not import each other. Static imports, `export … from`, import() and
// importModule() are all checked. Usage: node scripts/check-layers.mjs [--root DIR]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Lower index = lower layer. Folders in one inner array are peers. */
export const LAYERS = [
  ['platform'],
  ['ipc'],
  ['backends'],
  ['service', 'batch', 'monitor'],
  ['cluster'],
  ['report'],
  ['cli'],
  ['app'],
];
/** Top-level files of src/ (the package's library entry) sit with the start-up wiring. */
const TOP_FILE_LAYER = 'app';

const rankOf = new Map(LAYERS.flatMap((peers, rank) => peers.map((name) => [name, rank])));

const SPECIFIER =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\bimportModule\s*\(\s*|^\s*import\s+)(['"])(\.{1,2}\/[^'"]+)\1/gm;

function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(m?ts|m?js)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The layer folder of a path relative to src/ ("backends/msr/x.ts" → "backends"). */
function layerOf(relPath) {
  const parts = relPath.split(sep);
  return parts.length === 1 ? TOP_FILE_LAYER : parts[0];
}

/** Every import against the grain under `srcDir`, as "file: imports target (why)" lines. */
export function findViolations(srcDir) {
  const problems = [];
  for (const file of sourceFiles(srcDir)) {
    const from = relative(srcDir, file);
    const fromLayer = layerOf(from);
    const fromRank = rankOf.get(fromLayer);
    if (fromRank === undefined) {
      problems.push(
        `${from}: folder "${fromLayer}" is in no layer (add it to scripts/check-layers.mjs and docs/architecture.md)`,
      );
      continue;
    }
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(SPECIFIER)) {
      const target = relative(srcDir, normalize(join(dirname(file), match[2])));
      if (target.startsWith('..')) {
        problems.push(`${from}: imports ${match[2]}, outside src/`);
        continue;
      }
      const toLayer = layerOf(target);
      if (toLayer === fromLayer) continue;
      const toRank = rankOf.get(toLayer);
      if (toRank === undefined) problems.push(`${from}: imports ${target}, in no layer`);
      else if (toRank > fromRank)
        problems.push(`${from}: imports ${target} (${fromLayer} is below ${toLayer})`);
      else if (toRank === fromRank)
        problems.push(`${from}: imports ${target} (${fromLayer} and ${toLayer} are peers)`);
    }
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--root');
  const root = at > 0 ? process.argv[at + 1] : join(dirname(fileURLToPath(import.meta.url)), '..');
  const problems = findViolations(join(root, 'src'));
  if (problems.length > 0) {
    for (const p of problems) console.error(`check-layers: ${p}`);
    console.error(`check-layers: ${problems.length} import(s) against the layers (see docs/architecture.md)`);
    process.exit(1);
  }
  console.log('check-layers: every import in src/ follows the layers');
}
