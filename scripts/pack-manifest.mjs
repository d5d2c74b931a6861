#!/usr/bin/env node
// npm's prepack/postpack (docs/packaging.md): the packed package.json has no `prepare` script.
// npm 11 lists the prepare script of a package installed from a tarball or directory as an
// install script "not yet covered by allowScripts" (and npm 12 will not run it); the tarball
// holds the built dist/, so it needs none. The checkout keeps it: `npm ci` there builds.
//   prepack:  build (unless JOULEGATE_PACK_SKIP_BUILD=1: dist/ was just built), then take
//             `prepare` out of package.json, keeping the original beside it;
//   postpack: put the original back.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const FILE = 'package.json';
const KEPT = '.package.json.prepack';
const mode = process.argv[2];
// A pack that stopped before postpack left the original here: it is the one to keep.
if (existsSync(KEPT)) renameSync(KEPT, FILE);
if (mode === 'prepack') {
  if (process.env.JOULEGATE_PACK_SKIP_BUILD !== '1')
    execFileSync('npm', ['run', 'build'], { stdio: 'inherit' });
  const text = readFileSync(FILE, 'utf8');
  const pkg = JSON.parse(text);
  delete pkg.scripts.prepare;
  writeFileSync(KEPT, text);
  // Renamed into place: a reader (version.ts, another npm) sees one whole file or the other.
  writeFileSync(`${FILE}.tmp`, `${JSON.stringify(pkg, null, 2)}\n`);
  renameSync(`${FILE}.tmp`, FILE);
} else if (mode !== 'postpack') {
  throw new Error('pack-manifest: prepack or postpack');
}
