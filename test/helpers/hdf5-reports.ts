import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../../src/monitor/model/report-model.js';
import { run, runCli } from './cli.js';
import { tickerSource } from './proc-stat.js';
import { FIXTURES } from './tmp.js';

/*
 * Monitor runs that write json and hdf5 reports, and the independent HDF5 implementation the
 * tests read them with: h5py on libhdf5 (Debian's python3-h5py).
 */

const PYTHON = '/usr/bin/python3';
const INDEX = new URL('../../dist/index.js', import.meta.url).pathname;
export const PERUN_CHECK = join(FIXTURES, 'perun_hdf5_check.py');
/** Writes a file laid out as perun writes it: `python3 perun_hdf5_make.py FILE`. */
export const FIXTURES_PERUN_MAKE = join(FIXTURES, 'perun_hdf5_make.py');

/** Runs python3 with h5py; returns its output, failing the test on a non-zero exit. */
export async function python(args: string[], what = 'python3'): Promise<string> {
  const r = await run(PYTHON, args);
  if (/No module named 'h5py'/.test(r.stderr))
    assert.fail(`${PYTHON} has no h5py: install Debian's python3-h5py (.ci/run does)`);
  assert.equal(r.code, 0, `${what} failed:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** A JSON report as written (null is NaN: reports hold no other nulls). */
export const parseReport = (text: string) =>
  JSON.parse(text, (_k, v) => (v === null ? Number.NaN : v)) as Report;
export const readReport = (path: string) => parseReport(readFileSync(path, 'utf8'));

/** The one file in `dir` matching `re`. */
export function onlyFile(dir: string, re: RegExp): string {
  const found = readdirSync(dir).filter((f) => re.test(f));
  assert.equal(found.length, 1, `one file matching ${re} in ${dir}: ${found}`);
  return join(dir, found[0]!);
}

/**
 * An app in `dir` with an `outer` region around two calls of `step` (both
 * sleeping, so that a ticker on the same event loop keeps running). With
 * `statPath` (see proc-stat.ts), the app also makes that fixture's CPUs busy half the time.
 */
export function regionsApp(dir: string, statPath?: string): string {
  const app = join(dir, 'app.mjs');
  // Ticking starts a sample period (20 ms) before the first call, so a reading with ticks in it
  // precedes the call and covers it.
  const ticker =
    statPath === undefined
      ? ''
      : `${tickerSource(statPath, 1, 1)}\nstartTicking(5);\nawait new Promise((r) => setTimeout(r, 30));\n`;
  writeFileSync(
    app,
    `${ticker}import { measure, region } from ${JSON.stringify(INDEX)};
const outer = region('outer');
await measure('step', () => new Promise((r) => setTimeout(r, 30)));
await measure('step', () => new Promise((r) => setTimeout(r, 40)));
outer.end();
${statPath === undefined ? '' : 'stopTicking();\n'}`,
  );
  return app;
}

/** `joulegate monitor --format json,hdf5` on a sysroot, writing into `out`; returns the JSON report. */
export async function monitorJsonHdf5(
  root: string,
  out: string,
  extra: string[],
  command: string[],
): Promise<Report> {
  const r = await runCli(
    ['monitor', '--format', 'json,hdf5', '--data-out', out, ...extra, '--', ...command],
    {
      cwd: out,
      env: { JOULEGATE_SYSROOT: root },
    },
  );
  assert.equal(r.code, 0, r.stderr);
  return readReport(onlyFile(out, /\.json$/));
}
