import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { run, runCli } from '../helpers/cli.js';
import { parseReport, python } from '../helpers/hdf5-reports.js';
import { needsH5py, needsTool, requirements } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const skip = requirements(needsH5py(), needsTool('h5dump'));

/*
 * perun's file habit (`[output] hdf5_file = app`): one <app>.hdf5 in data_out that every run is
 * added to, read back by h5py and h5dump (libhdf5), runs picked with `export -i`; never
 * half-written, also when the writer dies in the middle.
 */

const ROOT = copyFixture('vm-1s4c');
const env = { JOULEGATE_SYSROOT: ROOT };
const REPO = new URL('../..', import.meta.url).pathname;

/** The MULTI_RUN ids h5py finds in the file (h5py lists them by name). */
async function runIds(file: string): Promise<string[]> {
  const out = await python([
    '-c',
    `import h5py, json, sys
with h5py.File(sys.argv[1], "r") as f:
    app = f[list(f.keys())[0]]
    print(json.dumps([str(g.attrs.get("id", name)) for name, g in app["nodes"].items()]))`,
    file,
  ]);
  return (JSON.parse(out) as string[]).sort();
}

async function h5dumpOk(file: string): Promise<void> {
  const r = await run('h5dump', ['-H', file]);
  assert.equal(r.code, 0, `h5dump: ${r.stderr}`);
}

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

async function monitorRun(dir: string, extra: string[]) {
  const r = await runCli(
    [
      'monitor',
      '--hdf5_file',
      'app',
      '--data_out',
      dir,
      '-n',
      'acc',
      '-f',
      'json',
      '--sampling_period',
      '0.05',
      ...extra,
    ],
    { cwd: dir, env },
  );
  assert.equal(r.code, 0, r.stderr);
  return r;
}

describe("perun's accumulating <app>.hdf5 (hdf5_file = app)", { skip }, () => {
  it('adds every run to one file that h5py and h5dump read; export -i picks each run as it was', async () => {
    const dir = tempDir();
    const first = await monitorRun(dir, ['-i', 'r1', '--', 'sleep', '0.1']);
    assert.match(first.stderr, /wrote .*\/acc\.hdf5\n/);
    const second = await monitorRun(dir, ['-i', 'r1', '--', 'sleep', '0.2']);
    assert.match(second.stderr, /wrote .*\/acc\.hdf5 \(as run r1_1\)\n/, "perun's _N for an id taken");
    await monitorRun(dir, ['-i', 'r3', '--rounds', '2', '--', 'true']);
    const file = join(dir, 'acc.hdf5');
    assert.deepEqual(await runIds(file), ['r1', 'r1_1', 'r3']);
    await h5dumpOk(file);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith('.hdf5') || f.includes('tmp') || f.endsWith('.lock')),
      ['acc.hdf5'],
      'one file, no temp or lock files left',
    );
    // Each run of the file is the report that run wrote as JSON (but for the renamed id).
    const jsons = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
    assert.equal(jsons.length, 3);
    for (const [id, json] of [
      ['r1', 'acc_r1.json'],
      ['r1_1', 'acc_r1_1.json'],
      ['r3', 'acc_r3.json'],
    ] as const) {
      const r = await runCli(['export', '-i', id, file, join(dir, `x-${id}`), 'json']);
      assert.equal(r.code, 0, r.stderr);
      const fromFile = parseReport(readFileSync(r.stdout.trim(), 'utf8'));
      const written = parseReport(readFileSync(join(dir, json), 'utf8'));
      assert.deepEqual({ ...fromFile, runId: '' }, { ...written, runId: '' }, id);
      assert.equal(fromFile.runId, id);
    }
    // Without -i: the latest run, as perun's export.
    const latest = await runCli(['export', file, join(dir, 'latest'), 'json']);
    assert.equal(parseReport(readFileSync(latest.stdout.trim(), 'utf8')).runId, 'r3');
    const bad = await runCli(['export', '-i', 'nope', file, 'json']);
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr, `Error: ${file}: no run nope in this file (it has r1, r1_1, r3)\n`);
  });

  it('is never half-written: a writer killed mid-write leaves the old file whole, and the next run adds to it', async () => {
    const dir = tempDir();
    await monitorRun(dir, ['-i', 'before', '--', 'true']);
    const file = join(dir, 'acc.hdf5');
    const before = sha(file);
    const report = join(dir, 'acc_before.json');
    // A writer that dies (SIGKILL) at its third write: the lock's pid, the superblock, then here.
    const crash = join(dir, 'crash.mjs');
    writeFileSync(
      crash,
      `import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
const { addToAppFile } = await import(${JSON.stringify(join(REPO, 'src/report/hdf5-app-file.ts'))});
const report = JSON.parse(fs.readFileSync(${JSON.stringify(report)}, 'utf8'), (_k, v) => (v === null ? NaN : v));
report.runId = 'crashed';
const write = fs.writeSync;
let n = 0;
fs.writeSync = (...args) => {
  if (++n === 3) process.kill(process.pid, 'SIGKILL');
  return write(...args);
};
syncBuiltinESMExports();
await addToAppFile(report, ${JSON.stringify(dir)});
`,
    );
    const killed = await run(process.execPath, ['--import', 'tsx', crash], { cwd: REPO });
    assert.equal(killed.signal, 'SIGKILL', killed.stderr);
    const left = readdirSync(dir);
    assert.ok(
      left.some((f) => f.endsWith('.tmp')),
      `the dead writer's part is a temp file: ${left.join(' ')}`,
    );
    assert.ok(left.includes('acc.hdf5.lock'), "the dead writer's lock stays");
    assert.equal(sha(file), before, 'the file is the old one, byte for byte');
    assert.deepEqual(await runIds(file), ['before']);
    await h5dumpOk(file);
    // The next run takes over the dead writer's lock and adds to the whole old file.
    await monitorRun(dir, ['-i', 'after', '--', 'true']);
    assert.deepEqual(await runIds(file), ['after', 'before']);
    await h5dumpOk(file);
    assert.ok(!readdirSync(dir).includes('acc.hdf5.lock'));
  });

  it("leaves a file perun wrote alone: that run's HDF5 is written as its own file, saying why", async () => {
    const dir = tempDir();
    await python([
      join(new URL('../fixtures/', import.meta.url).pathname, 'perun_hdf5_make.py'),
      join(dir, 'acc.hdf5'),
    ]);
    const before = sha(join(dir, 'acc.hdf5'));
    const r = await monitorRun(dir, ['-i', 'mine', '--', 'true']);
    assert.equal(sha(join(dir, 'acc.hdf5')), before);
    assert.match(
      r.stderr,
      /acc\.hdf5 was written by perun; joulegate adds runs only to a file it wrote itself/,
    );
    assert.match(r.stderr, /wrote .*acc_mine\.hdf5/);
  });
});
