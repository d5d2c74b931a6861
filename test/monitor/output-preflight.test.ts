import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { makeDirs } from '../../src/platform/make-dirs.js';
import { CLI, run, runCli } from '../helpers/cli.js';
import { needsTestUsers } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { asUser, ensureUser } from '../helpers/users.js';

const asTestUsers = needsTestUsers();

const readJson = (path: string) =>
  JSON.parse(readFileSync(path, 'utf8'), (_k, v) => (v === null ? Number.NaN : v)) as Report;

/** `monitor … -- touch <marker>`: the marker exists only if the app was started. */
async function monitorTouching(args: string[], cwd: string) {
  const marker = join(cwd, 'app-ran');
  const started = performance.now();
  const r = await runCli(['monitor', ...args, '--', 'touch', marker], { cwd, timeoutMs: 30_000 });
  return { ...r, seconds: (performance.now() - started) / 1000, appRan: existsSync(marker) };
}

/** One line on stderr, "Error: …", non-zero exit, app not started, no stack trace. */
function assertRefused(r: Awaited<ReturnType<typeof monitorTouching>>, message: RegExp): void {
  assert.notEqual(r.code, 0);
  assert.equal(r.appRan, false, 'the app must not start');
  assert.match(r.stderr, /^Error: [^\n]+\n$/);
  assert.match(r.stderr, message);
}

describe('monitor checks its output before the app starts', () => {
  it('--data-out /proc/nope: one line, non-zero, ends by itself, app not started', async () => {
    // Node's recursive mkdir spins for ever on /proc/nope: the fault is a monitor that never
    // ends (killed at the run's timeout), not a slow one, so that is what is asserted.
    const r = await monitorTouching(['--data-out', '/proc/nope'], tempDir());
    assert.equal(r.signal, null, `killed after ${r.seconds.toFixed(2)} s: it did not end by itself`);
    assertRefused(r, /cannot use output directory \/proc\/nope: cannot create \/proc\/nope \(ENOENT/);
  });

  it('a file, a dangling link, a path through a file', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'afile'), '');
    symlinkSync(join(dir, 'missing', 'target'), join(dir, 'dangling'));
    const cases: [string, RegExp][] = [
      ['afile', /afile exists and is not a directory/],
      ['dangling', /dangling is a symbolic link to a missing target/],
      ['afile/sub', /a part of afile\/sub is not a directory/],
    ];
    for (const [dataOut, message] of cases)
      assertRefused(await monitorTouching(['--data-out', dataOut], dir), message);
  });

  it('a directory the user may not write to', { skip: asTestUsers }, async () => {
    const dir = tempDir();
    const readOnly = join(dir, 'ro');
    mkdirSync(readOnly, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const user = ensureUser('joulegate-mon');
    const marker = join(dir, 'app-ran');
    const r = await run(
      'env',
      [process.execPath, CLI, 'monitor', '--data-out', readOnly, '--', 'touch', marker],
      {
        prefix: asUser(user),
        cwd: dir,
      },
    );
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `Error: cannot write to output directory ${readOnly} (EACCES: permission denied)\n`,
    );
    assert.equal(existsSync(marker), false);
    assert.deepEqual(readdirSync(readOnly), [], 'the write test leaves nothing behind');
  });

  it('a missing -c file and an unknown format', async () => {
    const dir = tempDir();
    assertRefused(
      await monitorTouching(['-c', join(dir, 'nope.ini'), '--data-out', dir], dir),
      /configuration file .*nope\.ini not found/,
    );
    assertRefused(
      await monitorTouching(['--format', 'json,xml', '--data-out', dir], dir),
      /format = "json,xml": expected one or more of/,
    );
  });

  it('creates a missing --data-out with its parents', async () => {
    const dir = tempDir();
    const r = await monitorTouching(['--format', 'json', '--data-out', 'a/b/c'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readdirSync(join(dir, 'a/b/c')).filter((f) => f.endsWith('.json')).length, 1);
  });
});

describe('a report that cannot be written where asked is written elsewhere', () => {
  it('every format goes to the temp directory when --data-out is gone after the start', async () => {
    const dir = tempDir();
    const fallback = tempDir();
    // The app replaces the output directory with a file: every writer fails at the end.
    const r = await runCli(
      [
        'monitor',
        '--format',
        'text,json,hdf5',
        '--data-out',
        'out',
        '--app-name',
        'gone',
        '--run-id',
        'r1',
        '--',
        'sh',
        '-c',
        'rm -r out && echo > out',
      ],
      { cwd: dir, env: { TMPDIR: fallback } },
    );
    assert.equal(r.code, 1, r.stderr);
    for (const ext of ['txt', 'json', 'hdf5']) {
      const path = join(fallback, `gone_r1.${ext}`);
      assert.ok(
        r.stderr.includes(`out exists and is not a directory; wrote it to ${path} instead`),
        r.stderr,
      );
      assert.ok(existsSync(path));
    }
    assert.equal(readJson(join(fallback, 'gone_r1.json')).app, 'gone');
  });

  it('one failing format: the others are written in place, the failed one in the temp directory', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    const fallback = tempDir();
    mkdirSync(out);
    // Every name the json writer may pick is taken; text and csv have theirs free.
    for (let n = 0; n < 10_000; n++) writeFileSync(join(out, `one_r1${n === 0 ? '' : `_${n}`}.json`), '');
    const r = await runCli(
      [
        'monitor',
        '--format',
        'text,json,csv',
        '--data-out',
        out,
        '--app-name',
        'one',
        '--run-id',
        'r1',
        '--',
        'true',
      ],
      { cwd: dir, env: { TMPDIR: fallback } },
    );
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`wrote ${out}/one_r1\\.txt\\n`));
    assert.match(r.stderr, new RegExp(`wrote ${out}/one_r1\\.csv\\n`));
    const moved = join(fallback, 'one_r1.json');
    assert.ok(
      r.stderr.includes(
        `could not write the json report to ${out}: no free file name for one_r1.json in ${out}; wrote it to ${moved} instead`,
      ),
      r.stderr,
    );
    assert.equal(readJson(moved).runId, 'r1');
  });

  it('as a user whose output directory turns read-only during the run', { skip: asTestUsers }, async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const user = ensureUser('joulegate-mon');
    const out = join(dir, 'out');
    const fallback = join(dir, 'tmp');
    for (const d of [out, fallback]) {
      mkdirSync(d);
      chownSync(d, user.uid, user.gid);
    }
    const r = await run(
      'env',
      [
        `TMPDIR=${fallback}`,
        process.execPath,
        CLI,
        'monitor',
        '--format',
        'json',
        '--data-out',
        out,
        '--app-name',
        'ro',
        '--run-id',
        'r1',
        '--',
        'chmod',
        '555',
        out,
      ],
      { prefix: asUser(user), cwd: dir },
    );
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /could not write the json report to .*EACCES.*; wrote it to .*\/tmp\/ro_r1\.json instead/,
    );
    assert.equal(readJson(join(fallback, 'ro_r1.json')).app, 'ro');
  });
});

describe('makeDirs', () => {
  it('ends with one line where mkdir keeps failing (Node recursive mkdir would spin)', () => {
    assert.throws(() => makeDirs('/proc/nope/deeper'), /cannot create \/proc\/nope \(ENOENT/);
  });

  it('creates the missing parts and accepts an existing directory or a link to one', () => {
    const dir = tempDir();
    makeDirs(join(dir, 'x/y/z'));
    makeDirs(join(dir, 'x/y/z'));
    symlinkSync(join(dir, 'x'), join(dir, 'link'));
    makeDirs(join(dir, 'link/y/new'));
    assert.ok(existsSync(join(dir, 'x/y/new')));
  });
});
