#!/usr/bin/env node
// Runs every test/**/*.test.ts with node:test through the tsx loader. Node 20's --test takes no
// globs, so the file list is collected here. Extra args are file filters (substrings of paths).
//
// The tests run in a controlled environment: PATH is the system directories only, and of the
// caller's variables only those listed in KEPT pass (a host's SLURM_*, proxies, NODE_OPTIONS or
// a real bus address cannot change a result). DBUS_SYSTEM_BUS_ADDRESS points at no bus, so code
// that falls back to the system bus never reaches the machine's.
//
// At the end it prints which tests were skipped and why (test/helpers/requirements.ts gives the
// reasons; JOULEGATE_TEST_STRICT=1 turns a missing requirement into a failure instead), removes
// the test accounts the run added (test/helpers/users.ts) and the tsx cache dirs those accounts
// left in the temp dir, and lists what else the run left in /dev/shm, /run and the temp dir:
// a warning locally (another run may share the temp dir), a failure in strict mode (CI).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeTestAccounts, TEST_ACCOUNT, testAccounts } from '../test/helpers/accounts.mjs';

const STRICT_VARIABLE = 'JOULEGATE_TEST_STRICT';
const strict = !['', '0', undefined].includes(process.env[STRICT_VARIABLE]);

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

// ---- environment --------------------------------------------------------------------------

/** The caller's variables that pass: identity, locale display, temp dir, and the tests' own knobs. */
const KEPT = [
  /^(HOME|USER|LOGNAME|TERM|COLORTERM|NO_COLOR|FORCE_COLOR|TMPDIR|CI)$/,
  /^(JOULEGATE_TEST_STRICT|JOULEGATE_KEEP_TMP)$/,
  /^JG_PROPERTY_/, // test/service/restore-property.test.ts: run counts and seed
];
const SYSTEM_PATH = ['/usr/sbin', '/usr/bin', '/sbin', '/bin'];

function testEnvironment() {
  const env = {};
  for (const [name, value] of Object.entries(process.env))
    if (value !== undefined && KEPT.some((re) => re.test(name))) env[name] = value;
  env.PATH = SYSTEM_PATH.join(':');
  env.LANG = 'C.UTF-8';
  env.DBUS_SYSTEM_BUS_ADDRESS = 'unix:path=/nonexistent/joulegate-tests-have-no-system-bus';
  return env;
}

// ---- what the run leaves behind -----------------------------------------------------------

const TEMP = tmpdir();
/** tsx's own cache of the user running the tests is meant to stay (it makes the next run start faster). */
const OWN_TSX_CACHE = `tsx-${process.getuid?.()}`;
/** Places a run may leave things in, and which of their entries are the tests'. */
const WATCHED = [
  { dir: '/dev/shm', ours: () => true },
  { dir: '/run', ours: (name) => /^(geopm|joulegate|jg-)/.test(name) },
  { dir: TEMP, ours: (name) => /^(tsx-\d+|joulegate-|jg-)/.test(name) && name !== OWN_TSX_CACHE },
];

function entries({ dir, ours }) {
  try {
    return readdirSync(dir)
      .filter(ours)
      .map((name) => join(dir, name));
  } catch {
    return [];
  }
}
const snapshot = () => new Set(WATCHED.flatMap(entries));

/** The account name of a uid; undefined where none has it (any more). */
function userOf(uid) {
  const r = spawnSync('getent', ['passwd', String(uid)], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split(':')[0] : undefined;
}

/**
 * tsx's cache dir of a test user (tsx-<uid>) outlives the user. Those this run made are removed
 * when the user is gone or is a test account (one that was there before the run keeps its
 * account, but the cache it got in this run is still the run's own).
 */
function removeOrphanTsxCaches(before) {
  const removed = [];
  for (const path of entries(WATCHED[2])) {
    const uid = /\/tsx-(\d+)$/.exec(path)?.[1];
    if (uid === undefined || before.has(path)) continue;
    const user = userOf(uid);
    if (user !== undefined && !TEST_ACCOUNT.test(user)) continue;
    rmSync(path, { recursive: true, force: true });
    removed.push(path);
  }
  return removed;
}

// ---- skipped tests -----------------------------------------------------------------------

function skipSummary(skipsFile) {
  let lines = [];
  try {
    lines = readFileSync(skipsFile, 'utf8').split('\n').filter(Boolean);
  } catch {
    return;
  }
  const byReason = new Map();
  for (const line of lines) {
    const skip = JSON.parse(line);
    const entry = byReason.get(skip.reason) ?? { tests: 0, suites: 0, files: new Set() };
    entry[skip.suite ? 'suites' : 'tests']++;
    if (skip.file) entry.files.add(skip.file.replace(`${process.cwd()}/`, ''));
    byReason.set(skip.reason, entry);
  }
  if (byReason.size === 0) {
    console.log('run-tests: nothing skipped');
    return;
  }
  const count = (n, what) => (n ? `${n} ${what}${n === 1 ? '' : 's'}` : '');
  const total = [...byReason.values()].reduce((a, e) => [a[0] + e.tests, a[1] + e.suites], [0, 0]);
  console.log(
    `run-tests: skipped ${[count(total[0], 'test'), count(total[1], 'suite')].filter(Boolean).join(' and ')}:`,
  );
  for (const [reason, e] of [...byReason].sort(
    (a, b) => b[1].tests + b[1].suites - a[1].tests - a[1].suites,
  )) {
    const what = [count(e.tests, 'test'), count(e.suites, 'suite')].filter(Boolean).join(' and ');
    console.log(`  ${what} in ${count(e.files.size, 'file')}: ${reason}`);
  }
}

// ---- run ---------------------------------------------------------------------------------

const accountsBefore = testAccounts();
const leftBefore = snapshot();
const runDir = mkdtempSync(join(TEMP, 'joulegate-run-tests-'));
const skipsFile = join(runDir, 'skips.jsonl');

function cleanUp() {
  skipSummary(skipsFile);
  rmSync(runDir, { recursive: true, force: true });
  // Only root adds accounts; a run as another user has none to remove.
  const { removed, failed } =
    process.getuid?.() === 0 ? removeTestAccounts(accountsBefore) : { removed: [], failed: [] };
  if (removed.length > 0) console.log(`run-tests: removed test accounts ${removed.join(' ')}`);
  for (const f of failed) console.error(`run-tests: could not remove test account (${f})`);
  const caches = removeOrphanTsxCaches(leftBefore);
  if (caches.length > 0) console.log(`run-tests: removed tsx caches of test users: ${caches.join(' ')}`);
  const left = [...snapshot()].filter((path) => !leftBefore.has(path));
  if (left.length > 0) {
    const how = strict ? 'error' : 'warning';
    console.error(
      `run-tests: ${how}: the run left ${left.length} entr${left.length === 1 ? 'y' : 'ies'} behind:`,
    );
    for (const path of left) console.error(`  ${path}`);
    if (!strict)
      console.error('  (a failure with JOULEGATE_TEST_STRICT=1; another run may share these dirs)');
  }
  return failed.length === 0 && !(strict && left.length > 0);
}

const visibleReporter = process.stdout.isTTY ? 'spec' : 'tap';
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=2',
    `--test-reporter=${visibleReporter}`,
    '--test-reporter-destination=stdout',
    `--test-reporter=${new URL('./test-skips-reporter.mjs', import.meta.url).pathname}`,
    `--test-reporter-destination=${skipsFile}`,
    ...files,
  ],
  { stdio: 'inherit', env: testEnvironment() },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  const cleaned = cleanUp();
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code === 0 && !cleaned ? 1 : (code ?? 1));
});
