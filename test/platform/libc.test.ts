import assert from 'node:assert/strict';
import { test } from 'node:test';
import { run } from '../helpers/cli.js';

const DIST = new URL('../../dist/', import.meta.url).pathname;

test('libc: one module for every caller, koffi loaded on first use only', async () => {
  // Importing every libc user loads no native code; the first call does, for all of them.
  const script = `
import { createRequire } from 'node:module';
const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/koffi/'));
const nss = await import('${DIST}service/access/nss.js');
const proc = await import('${DIST}platform/process.js');
await import('${DIST}ipc/batch/status-fifo.js');
await import('${DIST}ipc/batch/shared-buffer.js');
const before = loaded();
const root = nss.userByName('root');
const sid = proc.sessionIdOf(process.pid);
console.log(JSON.stringify({ before, after: loaded(), root, sid, pid: process.pid }));
`;
  // setsid: the script leads its own session, so getsid must name its own pid (a runner may
  // start tests in session 0, for which sessionIdOf answers undefined).
  const r = await run(process.execPath, ['--input-type=module', '-e', script], {
    prefix: ['setsid', '--wait'],
  });
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    before: boolean;
    after: boolean;
    root: { uid: number };
    sid: number;
    pid: number;
  };
  assert.equal(out.before, false, 'importing loads no koffi');
  assert.equal(out.after, true);
  assert.equal(out.root.uid, 0);
  assert.equal(out.sid, out.pid);
});
