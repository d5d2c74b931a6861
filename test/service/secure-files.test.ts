import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { secureMakeDirs, secureMakeFile, secureReadFile } from '../../src/service/secure-files.js';
import { needsTestUsers } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { ensureUser } from '../helpers/users.js';

const skip = needsTestUsers();

function collectLog() {
  const lines: string[] = [];
  return { lines, log: (l: string) => lines.push(l) };
}

/** Names in `dir` that are quarantined copies of `name`. */
function quarantined(dir: string, name: string): string[] {
  return readdirSync(dir).filter((n) => new RegExp(`^${name}-[0-9a-f-]{36}-INVALID$`).test(n));
}

test('secureMakeFile writes 0600 atomically: a reader of the old file never sees the new one', {
  skip,
}, () => {
  const dir = tempDir();
  const path = join(dir, 'state');
  const oldUmask = process.umask(0);
  try {
    secureMakeFile(path, 'old contents\n');
  } finally {
    process.umask(oldUmask);
  }
  assert.equal(statSync(path).mode & 0o7777, 0o600);
  const before = statSync(path).ino;
  const fd = openSync(path, 'r');
  secureMakeFile(path, 'new\n');
  const buf = Buffer.alloc(64);
  const n = readSync(fd, buf, 0, 64, 0);
  closeSync(fd);
  // The old inode is intact (replaced by rename, not truncated in place).
  assert.equal(buf.subarray(0, n).toString(), 'old contents\n');
  assert.notEqual(statSync(path).ino, before);
  assert.equal(readFileSync(path, 'utf8'), 'new\n');
  assert.deepEqual(readdirSync(dir), ['state'], 'no temporary file left behind');
});

test('secureMakeFile does not follow a symlink planted at the target', { skip }, () => {
  const dir = tempDir();
  const victim = join(dir, 'victim');
  writeFileSync(victim, 'precious\n');
  symlinkSync(victim, join(dir, 'state'));
  secureMakeFile(join(dir, 'state'), 'x\n');
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
  assert.equal(readFileSync(join(dir, 'state'), 'utf8'), 'x\n');
});

test('secureReadFile returns the contents of a 0600 file owned by the daemon', { skip }, () => {
  const dir = tempDir();
  secureMakeFile(join(dir, 'f'), 'hello\n');
  const { lines, log } = collectLog();
  assert.equal(secureReadFile(join(dir, 'f'), { log }), 'hello\n');
  assert.equal(secureReadFile(join(dir, 'absent'), { log }), undefined);
  assert.deepEqual(lines, []);
});

for (const [what, prepare, reason] of [
  ['mode 0644', (p: string) => chmodSync(p, 0o644), /has mode 0644, expected 0600/],
  ['mode 0400', (p: string) => chmodSync(p, 0o400), /has mode 0400, expected 0600/],
  [
    'another owner',
    (p: string) => {
      const u = ensureUser('jg-e2-owner');
      chownSync(p, u.uid, u.gid);
    },
    /is owned by uid \d+ gid \d+, expected uid 0 gid 0/,
  ],
  [
    'a symlink',
    (p: string) => {
      const target = `${p}.target`;
      writeFileSync(target, 'SECRET\n', { mode: 0o600 });
      chmodSync(target, 0o600);
      // replace the file by a link to a perfectly secure file: still not trusted
      unlinkSync(p);
      symlinkSync(target, p);
    },
    /is a symbolic link/,
  ],
] as const) {
  test(`secureReadFile quarantines a file with ${what} and reads it as absent`, { skip }, () => {
    const dir = tempDir();
    const path = join(dir, 'list');
    secureMakeFile(path, 'A\n');
    prepare(path);
    const { lines, log } = collectLog();
    assert.equal(secureReadFile(path, { log }), undefined);
    const moved = quarantined(dir, 'list');
    assert.equal(moved.length, 1);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, reason);
    assert.ok(lines[0]!.includes(path) && lines[0]!.includes(moved[0]!), lines[0]);
    // The evidence is kept for the admin, the original name is free again.
    assert.equal(secureReadFile(path, { log }), undefined);
    assert.equal(lines.length, 1, 'a second read finds nothing and logs nothing');
  });
}

test('secureReadFile quarantines a directory or FIFO instead of reading or blocking on it', { skip }, () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'adir'), { mode: 0o600 });
  execFileSync('mkfifo', [join(dir, 'afifo')]);
  const { lines, log } = collectLog();
  assert.equal(secureReadFile(join(dir, 'adir'), { log }), undefined);
  assert.equal(secureReadFile(join(dir, 'afifo'), { log }), undefined);
  assert.equal(quarantined(dir, 'adir').length, 1);
  assert.equal(quarantined(dir, 'afifo').length, 1);
  assert.match(lines[0]!, /is not a regular file/);
});

test('secureMakeDirs creates missing dirs with the exact mode despite the umask', { skip }, () => {
  const dir = tempDir();
  const path = join(dir, 'a', 'b');
  const oldUmask = process.umask(0o077);
  try {
    secureMakeDirs(path, 0o711);
  } finally {
    process.umask(oldUmask);
  }
  assert.equal(statSync(path).mode & 0o7777, 0o711);
});

test('secureMakeDirs keeps a correct directory and its contents', { skip }, () => {
  const dir = tempDir();
  const path = join(dir, 'state');
  secureMakeDirs(path);
  writeFileSync(join(path, 'keep'), 'x');
  const { lines, log } = collectLog();
  secureMakeDirs(path, 0o700, { log });
  assert.deepEqual(readdirSync(path), ['keep']);
  assert.deepEqual(lines, []);
});

for (const [what, prepare, reason] of [
  ['mode 0755', (p: string) => mkdirSync(p, { mode: 0o755 }), /has mode 0755, expected 0700/],
  ['a regular file', (p: string) => writeFileSync(p, 'x'), /is not a directory/],
  [
    'a symlink to a good directory',
    (p: string) => {
      mkdirSync(`${p}.real`, { mode: 0o700 });
      symlinkSync(`${p}.real`, p);
    },
    /is a symbolic link/,
  ],
  [
    'another owner',
    (p: string) => {
      mkdirSync(p, { mode: 0o700 });
      const u = ensureUser('jg-e2-owner');
      chownSync(p, u.uid, u.gid);
    },
    /is owned by uid/,
  ],
] as const) {
  test(`secureMakeDirs quarantines ${what} and makes a fresh directory`, { skip }, () => {
    const dir = tempDir();
    const path = join(dir, 'state');
    prepare(path);
    chmodSync(dir, 0o700);
    const { lines, log } = collectLog();
    secureMakeDirs(path, 0o700, { log });
    const st = statSync(path);
    assert.ok(st.isDirectory());
    assert.equal(st.mode & 0o7777, 0o700);
    assert.equal(st.uid, 0);
    assert.deepEqual(readdirSync(path), []);
    assert.equal(quarantined(dir, 'state').length, 1);
    assert.match(lines[0]!, reason);
  });
}
