#!/usr/bin/env node
// Builds the batch server's native sampling loop, dist/native/libjoulegate-batch.so, from
// src/batch/native-loop.c (docs/batch.md, "The native sampling loop"). The loop is optional:
// where no C compiler is found ($CC, else cc), the build says so and goes on, and batch servers
// sample in JavaScript. A compiler that is there and fails fails the build.
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync } from 'node:fs';

const source = 'src/batch/native-loop.c';
const target = 'dist/native/libjoulegate-batch.so';
const cc = process.env.CC || 'cc';
const flags = [
  '-O2',
  '-std=c11',
  '-D_POSIX_C_SOURCE=200809L',
  '-Wall',
  '-Wextra',
  '-Werror',
  '-shared',
  '-fPIC',
  '-s', // stripped, as Debian ships objects; jg_serve_reads stays in the dynamic symbol table
];

mkdirSync('dist/native', { recursive: true });
const partial = `${target}.${process.pid}`;
const run = spawnSync(cc, [...flags, '-o', partial, source], { stdio: ['ignore', 'inherit', 'inherit'] });
if (run.error && run.error.code === 'ENOENT') {
  rmSync(target, { force: true });
  console.log(`build-native: no C compiler (${cc}): batch servers will sample in JavaScript`);
  process.exit(0);
}
if (run.status !== 0) {
  rmSync(partial, { force: true });
  console.error(`build-native: ${cc} failed on ${source} (exit ${run.status ?? run.signal})`);
  process.exit(1);
}
renameSync(partial, target);
