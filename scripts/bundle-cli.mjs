#!/usr/bin/env node
// Bundles the `joulegate` CLI into dist/cli/main.js (replacing tsc's output for that entry) plus
// chunks under dist/cli/chunks/ for what only some commands load. Loading ~150 ES modules one by
// one was most of the CLI's start-up time, which every `joulegate monitor` run pays. Native and rarely used heavy packages stay external (koffi is a
// native addon; h5wasm and vega are imported lazily, only when that output format is written).
// The daemon and the batch server are not bundled: the launcher finds server-main.js on disk.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

// Chunks are content-hashed: drop the previous build's so none go stale.
rmSync('dist/cli/chunks', { recursive: true, force: true });

await build({
  entryPoints: ['src/cli/main.ts'],
  outdir: 'dist/cli',
  // Code behind a dynamic import() (the D-Bus client, report formats, config files) goes into
  // chunks loaded on first use, with the Node built-ins only they need.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  external: ['koffi', 'h5wasm', 'vega', 'vega-lite'],
  // CommonJS dependencies bundled into ESM need a real `require` for Node built-ins.
  banner: {
    js: "import { createRequire as __jgCreateRequire } from 'node:module'; const require = __jgCreateRequire(import.meta.url);",
  },
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
