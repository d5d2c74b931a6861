#!/usr/bin/env node
// Runs every test/**/*.test.ts with node:test through the tsx loader. Node 20's --test takes no
// globs, so the file list is collected here. Extra args are file filters (substrings of paths).
// Test files share the system users and groups they create (test/helpers/users.ts); when all
// files are done, or the run is interrupted, the accounts this run added are removed.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { removeTestAccounts, testAccounts } from '../test/helpers/accounts.mjs';

function collect(dir) {
  const out = [];
  for (const entry of readdirSync(dir).sort()) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) {
      if (entry !== 'fixtures') out.push(...collect(p));
    } else if (entry.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
let files = collect('test');
if (filters.length) files = files.filter((f) => filters.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('run-tests: no test files matched');
  process.exit(1);
}

const accountsBefore = testAccounts();
function cleanUp() {
  const { removed, failed } = removeTestAccounts(accountsBefore);
  if (removed.length > 0) console.log(`run-tests: removed test accounts ${removed.join(' ')}`);
  for (const f of failed) console.error(`run-tests: could not remove test account (${f})`);
  return failed.length === 0;
}

const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], {
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  const cleaned = cleanUp();
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code === 0 && !cleaned ? 1 : (code ?? 1));
});
