import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { onlyFile } from '../helpers/hdf5-reports.js';
import { tempDir } from '../helpers/tmp.js';

/** A JSON report of a short real run, written by `monitor` into a fresh directory. */
async function jsonReport(): Promise<{ dir: string; text: string }> {
  const dir = tempDir();
  const r = await runCli(
    ['monitor', '--format', 'json', '--data-out', dir, '--app-name', 'w', '--', 'true'],
    {
      cwd: dir,
    },
  );
  assert.equal(r.code, 0, r.stderr);
  return { dir, text: readFileSync(onlyFile(dir, /\.json$/), 'utf8') };
}

describe('export that cannot be written: no file, one short line', () => {
  it('JSON → HDF5 with a 100 000-character metadata name fails leaving no .hdf5 and no temp file', async () => {
    const { dir, text } = await jsonReport();
    const report = JSON.parse(text);
    const long = `k${'x'.repeat(99_998)}z`;
    report.metadata = { ...report.metadata, [long]: 'v' };
    const input = join(dir, 'long.json');
    writeFileSync(input, JSON.stringify(report));
    const before = readdirSync(dir).sort();
    const r = await runCli(['export', input, 'hdf5']);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /^Error: HDF5 object .*: a message of \d+ bytes is over the 65535 an object header holds\n$/,
    );
    assert.ok(r.stderr.length < 400, `the error line quotes the value cut: ${r.stderr.length} characters`);
    assert.match(r.stderr, /…x+z \(100000 characters\)|over the 65535/);
    assert.deepEqual(readdirSync(dir).sort(), before, 'no .hdf5, no temp file');
  });

  it('a 100 000-character app name (the file name) fails in one short line, leaving nothing', async () => {
    const { dir, text } = await jsonReport();
    const report = JSON.parse(text);
    report.app = `a${'n'.repeat(99_999)}`;
    const input = join(dir, 'app.json');
    writeFileSync(input, JSON.stringify(report));
    const before = readdirSync(dir).sort();
    for (const format of ['text', 'hdf5']) {
      const r = await runCli(['export', input, format]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        // text fails at the file name; hdf5 earlier, at the name's link in the root group.
        /^Error: (cannot (open|write) .*\(100\d{3} characters\)( for writing)?: ENAMETOOLONG|HDF5 object \/: .* over the 65535)/,
      );
      assert.ok(r.stderr.length < 400 && r.stderr.endsWith('\n') && !r.stderr.slice(0, -1).includes('\n'));
    }
    assert.deepEqual(readdirSync(dir).sort(), before);
  });
});
