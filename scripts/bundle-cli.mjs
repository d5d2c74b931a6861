#!/usr/bin/env node
// Bundles the `joulegate` CLI into one file (dist/cli/main.js, replacing tsc's output for that
// entry). Loading ~150 ES modules one by one was most of the CLI's start-up time, which every
// `joulegate monitor` run pays. Native and rarely used heavy packages stay external (koffi is a
// native addon; h5wasm and vega are imported lazily, only when that output format is written).
// The daemon and the batch server are not bundled: the launcher finds server-main.js on disk.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/cli/main.ts'],
  outfile: 'dist/cli/main.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  external: ['koffi', 'h5wasm', 'vega', 'vega-lite'],
  // CommonJS dependencies bundled into ESM need a real `require` for Node built-ins.
  banner: { js: "import { createRequire as __jgCreateRequire } from 'node:module'; const require = __jgCreateRequire(import.meta.url);" },
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
