import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { shortValue } from '../../src/platform/errors.js';
import { PendingFile, writeAll, writeWhole } from '../../src/platform/whole-file.js';
import { needsRoot } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';

const fill = (text: string) => (fd: number) => writeAll(fd, Buffer.from(text));

describe('output files appear whole or not at all', () => {
  it('a free name is claimed only when the file is complete: <stem>_1 beside an existing one', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'r.json'), 'older');
    const path = writeWhole({ dir, stem: 'r', ext: 'json' }, fill('{}\n'));
    assert.equal(path, join(dir, 'r_1.json'));
    assert.equal(readFileSync(join(dir, 'r.json'), 'utf8'), 'older');
    assert.equal(readFileSync(path, 'utf8'), '{}\n');
    assert.deepEqual(readdirSync(dir).sort(), ['r.json', 'r_1.json']);
  });

  it('a fixed path keeps its old content until the new one is complete, then is replaced', () => {
    const dir = tempDir();
    const target = join(dir, 'out.csv');
    writeFileSync(target, 'old\n');
    const file = new PendingFile({ path: target });
    writeAll(file.fd, Buffer.from('new\n'));
    assert.equal(readFileSync(target, 'utf8'), 'old\n');
    assert.equal(readdirSync(dir).length, 2, 'the temp file sits beside the target');
    assert.equal(file.commit(), target);
    assert.equal(readFileSync(target, 'utf8'), 'new\n');
    assert.deepEqual(readdirSync(dir), ['out.csv']);
  });

  it('a write failing mid-way leaves neither the file nor its temp file', () => {
    const dir = tempDir();
    assert.throws(
      () =>
        writeWhole({ dir, stem: 'half', ext: 'hdf5' }, (fd) => {
          writeAll(fd, Buffer.alloc(1 << 20, 1));
          throw new Error('encoder broke');
        }),
      /encoder broke/,
    );
    assert.deepEqual(readdirSync(dir), []);
    const file = new PendingFile({ path: join(dir, 'trace.csv') });
    writeAll(file.fd, Buffer.from('TIME\n'));
    file.discard();
    assert.deepEqual(readdirSync(dir), []);
  });

  it('a full disk mid-way (ENOSPC on a 64 KiB tmpfs) leaves nothing, and says so in one line', {
    skip: needsRoot('mounts a small tmpfs to fill'),
  }, () => {
    const mount = join(tempDir(), 'small');
    mkdirSync(mount);
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mount], { encoding: 'utf8' });
    assert.equal(r.status, 0, `cannot mount a tmpfs: ${r.stderr.trim()}`);
    after(() => spawnSync('umount', [mount]));
    assert.throws(
      () => writeWhole({ dir: mount, stem: 'big', ext: 'json' }, fill('x'.repeat(1 << 20))),
      (err: Error) => /^cannot write .*big\.json: ENOSPC/.test(err.message) && !err.message.includes('\n'),
    );
    assert.deepEqual(readdirSync(mount), []);
  });
});

describe('shortValue: what an error line quotes', () => {
  it('keeps a short value, cuts a long one to head and tail with its length, escapes line breaks', () => {
    assert.equal(shortValue('cpu0'), 'cpu0');
    const cut = shortValue(`${'a'.repeat(50_000)}${'b'.repeat(50_000)}`);
    assert.equal(cut, `${'a'.repeat(40)}…${'b'.repeat(40)} (100000 characters)`);
    assert.equal(shortValue('two\nlines'), 'two\\nlines');
  });
});
