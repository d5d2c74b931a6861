#!/usr/bin/env node
// Builds the `joulegate` command: the whole CLI bundled into one CommonJS file,
// dist/app/joulegate.cjs, started by dist/app/joulegate-loader.js (src/app/joulegate-loader.ts) with a V8 code cache
// written here by one real run. Loading ~150 ES modules one by one, then compiling them, was
// most of the start-up time that every `joulegate monitor` run pays. Native and rarely used heavy
// packages stay external (koffi is a native addon loaded on first use; h5wasm is imported
// only when hdf5 is written). The daemon is bundled too (joulegated.cjs). The batch
// server is, into dist/app/batch-server.cjs, which the launcher prefers: every batch client pays
// for one such process, and the single file (zod tree-shaken) holds ~7 MB less and loads faster.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

const common = { platform: 'node', target: 'node20', logLevel: 'warning' };

/** One program as one CommonJS file; import.meta.url becomes the bundle's own file URL. */
function bundleCjs(entry, outfile, external, extra = {}) {
  return build({
    ...common,
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'cjs',
    external,
    define: { 'import.meta.url': '__jgModuleUrl' },
    banner: { js: "var __jgModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
    minifyWhitespace: true,
    minifySyntax: true,
    ...extra,
  });
}

for (const bundle of ['joulegate.cjs', 'joulegate-tools.cjs'])
  rmSync(`dist/app/${bundle}.cache`, { force: true });
await bundleCjs('src/app/joulegate.ts', 'dist/app/joulegate.cjs', ['koffi', 'h5wasm'], {
  sourcemap: true,
});
// The one-shot commands alone (read, write, session, access: GEOPM's tools), which the loader
// runs for them: a quarter of the whole CLI's source to compile on every call (docs/cli.md).
await bundleCjs('src/app/joulegate-tools.ts', 'dist/app/joulegate-tools.cjs', ['koffi', 'h5wasm']);
// A literal import() left in the bundle would fail at run time (see src/platform/dynamic-import.ts).
for (const file of ['dist/app/joulegate.cjs', 'dist/app/joulegate-tools.cjs']) {
  const stray = readFileSync(file, 'utf8').match(/\bimport\("[^"]*"\)/g);
  if (stray) throw new Error(`bundle-cli: use importModule() instead of ${stray.join(', ')} (${file})`);
}
await bundleCjs('src/app/batch-server.ts', 'dist/app/batch-server.cjs', ['koffi']);
// The daemon, likewise: one file instead of ~120 modules is ~10 MB less resident for the
// life of the node. dist/app/joulegated.js (the `joulegated` command) becomes its launcher.
await bundleCjs('src/app/joulegated.ts', 'dist/app/joulegated.cjs', ['koffi']);
// A young generation of 1 MB per semi-space: V8's default grows to 16 MB each (32 MB resident
// for good) once a client floods the daemon with calls at the caps, whose decoded names are
// garbage a moment later (bench/flood.ts). V8 reads it only at start, hence in the command line.
writeFileSync(
  'dist/app/joulegated.js',
  "#!/usr/bin/env -S node --max-semi-space-size=1\n// joulegated: runs the one-file bundle (scripts/bundle-cli.mjs).\nimport { createRequire } from 'node:module';\ncreateRequire(import.meta.url)('./joulegated.cjs');\n",
);
chmodSync('dist/app/joulegated.js', 0o755);
rmSync('dist/app/joulegated.js.map', { force: true });
await build({
  ...common,
  entryPoints: ['src/app/joulegate-loader.ts'],
  outfile: 'dist/app/joulegate-loader.js',
  format: 'esm',
  bundle: true,
});
// The same loader as CommonJS, which bin/joulegate runs: Node starts a .cjs entry through its
// synchronous CommonJS loader, without setting up the ES module loader (about 20 ms of CPU per
// one-shot command on the 2-core VM; docs/cli.md, "Start-up").
await bundleCjs('src/app/joulegate-loader.ts', 'dist/app/joulegate-loader.cjs', []);
rmSync('dist/app/joulegate-loader.js.map', { force: true }); // tsc's map of the loader, which the bundle replaced

// One real run of each bundle compiles what its runs need; the loader saves that code at exit
// (JOULEGATE_WRITE_CODE_CACHE=1). Each runs through bin/joulegate, whose V8 flags are part of
// what V8 checks before taking a cache, and the build checks that V8 takes it.
const scratch = mkdtempSync(join(tmpdir(), 'joulegate-build-'));
const env = {
  ...process.env,
  PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
  // The sample runs load no plugin and never reach a real daemon: a caller without
  // CAP_SYS_ADMIN tries this socket, finds nothing and reads what it can locally.
  JOULEGATE_PLUGIN_PATH: '',
  DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${join(scratch, 'no-bus')}`,
};
/**
 * Writes `bundle`'s cache from a run of `args` (with `input` on stdin); a run that fails or a
 * cache V8 does not take is dropped with a warning: the CLI works without it, only starts slower.
 */
function writeCodeCache(bundle, args, input) {
  const cache = `dist/app/${bundle}.cache`;
  const run = spawnSync('bin/joulegate', args, {
    env: { ...env, JOULEGATE_WRITE_CODE_CACHE: '1' },
    input,
    encoding: 'utf8',
  });
  const check = spawnSync('bin/joulegate', args, {
    env: { ...env, JOULEGATE_CODE_CACHE_CHECK: '1' },
    input,
    encoding: 'utf8',
  });
  if (run.status === 0 && check.stdout.trim() === 'accepted') return;
  rmSync(cache, { force: true });
  const why =
    run.status !== 0
      ? `the sample run failed: ${run.stderr.trim().split('\n').pop()}`
      : `V8 ${check.stdout.trim() || check.stderr.trim()} it`;
  console.warn(`bundle-cli: no code cache for ${bundle} (${why})`);
}
try {
  // The whole CLI's, from a `monitor` run (what every monitor start compiles).
  writeCodeCache('joulegate.cjs', ['monitor', '--format', 'text', '--data-out', scratch, '--', 'true']);
  // The one-shot commands', from a one-sample session: the start-up, the platform and the
  // session path of read, write, session and access (docs/cli.md, "Start-up").
  writeCodeCache('joulegate-tools.cjs', ['session', '-t', '0'], 'TIME board 0\n');
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
