#!/usr/bin/env node
/**
 * Entry of the `joulegate` command (built to dist/app/joulegate-loader.cjs for bin/joulegate, and
 * to dist/app/joulegate-loader.js). It runs the bundled CLI, dist/app/joulegate.cjs (or, for a
 * one-shot command, dist/app/joulegate-tools.cjs), through vm.Script with the V8 code cache the build wrote next to it:
 * compiling the bundle from source was about a third of every `joulegate monitor` start.
 * V8 rejects a cache made by another Node.js version, with other V8 flags (bin/joulegate's
 * --max-semi-space-size counts) or for other source, and the bundle is then compiled as usual.
 * With JOULEGATE_WRITE_CODE_CACHE=1 this run writes the cache when it exits (scripts/bundle-cli.mjs
 * does that once per build, through bin/joulegate); JOULEGATE_CODE_CACHE_CHECK=1 only says
 * whether V8 takes the cache (accepted, rejected or absent) and exits.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { oneShotCommand } from '../cli/tool-names.js';
import { HOST_IMPORT } from '../platform/dynamic-import.js';

// A one-shot command (read, write, session, access, geopm*) runs the bundle of those commands
// alone when it was built: a quarter of the whole CLI's source to compile (docs/cli.md, "Start-up").
const tools = fileURLToPath(new URL('./joulegate-tools.cjs', import.meta.url));
const oneShot =
  oneShotCommand(process.argv, process.env.JOULEGATE_AS_GEOPM_TOOL) !== undefined && existsSync(tools);
const bundle = oneShot ? tools : fileURLToPath(new URL('./joulegate.cjs', import.meta.url));
const cacheFile = `${bundle}.cache`;
let cachedData: Buffer | undefined;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  // no cache (not built yet, or removed): compile from source
}
// The CommonJS module wrapper, as Node's own loader applies it.
const wrapped = `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'utf8')}\n})`;
const writing = process.env.JOULEGATE_WRITE_CODE_CACHE === '1';
// V8 keeps the name a cache was made under (stack traces show it): made under a bare name, the
// shipped cache holds no path of the build machine. Both bundles' caches use this one: made
// under joulegate-tools.cjs, the tools cache held the bundle's absolute path (Node.js 20).
const script = writing
  ? new vm.Script(wrapped, { filename: 'joulegate.cjs' })
  : new vm.Script(wrapped, { filename: bundle, cachedData });
if (process.env.JOULEGATE_CODE_CACHE_CHECK === '1') {
  const verdict = cachedData === undefined ? 'absent' : script.cachedDataRejected ? 'rejected' : 'accepted';
  process.stdout.write(`${verdict}\n`);
  process.exit(0);
}
// import() inside a vm.Script has no loader behind it: the bundle imports ESM-only packages
// (h5wasm) and plugins through this one (src/platform/dynamic-import.ts).
(globalThis as Record<symbol, unknown>)[HOST_IMPORT] = (specifier: string) => import(specifier);
if (writing) {
  // At exit the cache also holds every function this run compiled, not only the top level.
  process.on('exit', () => {
    // node:v8 only here: loading it costs every start a few ms (docs/cli.md, "Start-up").
    const { setFlagsFromString } = createRequire(import.meta.url)('node:v8') as typeof import('node:v8');
    // V8 stamps the cache with its flags as they are now: flags the run changed (the monitor's
    // --no-opt, a full collection's --expose-gc, HDF5 reading's --liftoff-only) go back to
    // their defaults, or every later start, which has the defaults, would reject the cache.
    for (const flag of ['--opt', '--no-expose-gc', '--no-liftoff-only']) setFlagsFromString(flag);
    const tmp = `${cacheFile}.${process.pid}`;
    try {
      writeFileSync(tmp, script.createCachedData());
      renameSync(tmp, cacheFile);
    } catch (err) {
      rmSync(tmp, { force: true });
      process.stderr.write(
        `joulegate: could not write the code cache ${cacheFile}: ${(err as Error).message}\n`,
      );
      process.exitCode = 1;
    }
  });
}
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
