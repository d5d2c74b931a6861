import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

/** `export FILE json` must fail with exactly one line on stderr, nothing on stdout. */
async function assertOneLine(file: string, message: RegExp): Promise<void> {
  const r = await runCli(['export', file, 'json']);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stdout, '');
  assert.doesNotMatch(r.stderr, /HDF5-DIAG|\n\s+at |#00/);
  assert.match(r.stderr, /^Error: [^\n]+\n$/, r.stderr);
  assert.match(r.stderr, message);
}

describe('export of an unreadable input: one line, no library diagnostics', () => {
  it('missing files, a directory, text that is not JSON', async () => {
    const dir = tempDir();
    await assertOneLine(join(dir, 'missing.hdf5'), /cannot read .*missing\.hdf5: ENOENT/);
    await assertOneLine(join(dir, 'missing.json'), /cannot read .*missing\.json: ENOENT/);
    mkdirSync(join(dir, 'dir.hdf5'));
    await assertOneLine(join(dir, 'dir.hdf5'), /cannot read .*dir\.hdf5: EISDIR/);
    writeFileSync(join(dir, 'bad.json'), '{"kind": "joulegate-report", ');
    await assertOneLine(join(dir, 'bad.json'), /bad\.json: not valid JSON/);
  });

  it('a truncated and a damaged HDF5 report', async () => {
    const dir = tempDir();
    const r = await runCli(
      ['monitor', '--format', 'hdf5', '--data-out', dir, '--app-name', 'h', '--run-id', 'r1', '--', 'true'],
      { cwd: dir },
    );
    assert.equal(r.code, 0, r.stderr);
    const whole = readFileSync(join(dir, 'h_r1.hdf5'));
    // The signature is there, the rest of the file is not: libhdf5 would print its error stack.
    const truncated = join(dir, 'truncated.hdf5');
    writeFileSync(truncated, whole.subarray(0, 4096));
    await assertOneLine(truncated, /truncated\.hdf5: not a readable HDF5 file \(truncated file: eof = 4096/);
    // Every 97th byte after the superblock flipped: object headers and data are garbage.
    const damaged = Buffer.from(whole);
    for (let i = 2048; i < damaged.length; i += 97) damaged[i]! ^= 0x5a;
    const damagedPath = join(dir, 'damaged.hdf5');
    writeFileSync(damagedPath, damaged);
    await assertOneLine(
      damagedPath,
      /damaged\.hdf5: (damaged HDF5 report|not a readable HDF5 file|not a joulegate HDF5 report)/,
    );
    // The undamaged file still exports.
    const ok = await runCli(['export', join(dir, 'h_r1.hdf5'), 'json']);
    assert.equal(ok.code, 0, ok.stderr);
  });
});
