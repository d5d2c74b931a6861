import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { type RunResult, runCli } from '../../helpers/cli.js';
import { needsDaemon, whenMet } from '../../helpers/requirements.js';
import { asUser, ensureUser, type TestUser } from '../../helpers/users.js';
import { ServiceHarness } from '../harness.js';

const skip = needsDaemon();

// `joulegate access` against the real daemon on a private bus (the harness's FILECTL plugin
// gives the node writable controls).
const h = new ServiceHarness();
// Set up at top level: after() hooks registered inside a before() hook would stop the bus
// as soon as that hook finished.
await whenMet(skip, () => h.setup());
const member: TestUser = whenMet(skip, () => ensureUser('jg-e2-erin', ['jg-e2-grpd']));
const outsider: TestUser = whenMet(skip, () => ensureUser('jg-e2-frank'));
await whenMet(skip, () => h.startDaemon());

function access(args: string[], input = '', user?: TestUser): Promise<RunResult> {
  const env = h.env();
  const prefix = user ? [...asUser(user), 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`)] : [];
  return runCli(['access', ...args], { env, input, prefix });
}

function ok(r: RunResult): string {
  assert.equal(r.code, 0, `status ${r.code}: ${r.stderr}`);
  return r.stdout;
}

test('-a lists every supported name, sorted, from the daemon', { skip }, async () => {
  const signals = ok(await access(['-a']))
    .trim()
    .split('\n');
  assert.deepEqual(signals, [...signals].sort());
  assert.ok(signals.includes('TIME') && signals.includes('FILECTL::LIMIT'), signals.join(' '));
  const controls = ok(await access(['-a', '-c']))
    .trim()
    .split('\n');
  assert.ok(controls.includes('FILECTL::LIMIT'));
  assert.ok(!controls.includes('TIME'));
});

test('root writes group and default lists through the daemon; a member sees the union', {
  skip,
}, async () => {
  ok(await access(['-w', '-g', 'jg-e2-grpd'], '# readers\nFILECTL::LIMIT\n'));
  ok(await access(['-w', '-g', 'jg-e2-grpd', '-c'], 'FILECTL::LIMIT\n'));
  ok(await access(['-w', '-u'], 'TIME\n'));
  const file = join(h.configDir, 'jg-e2-grpd', 'allowed_signals');
  assert.equal(readFileSync(file, 'utf8'), 'FILECTL::LIMIT\n');
  assert.equal(statSync(file).mode & 0o7777, 0o600);
  assert.equal(ok(await access(['-g', 'jg-e2-grpd', '-c'])), 'FILECTL::LIMIT\n');
  assert.equal(ok(await access(['-u'])), 'TIME\n');

  assert.equal(ok(await access([], '', member)), 'FILECTL::LIMIT\nTIME\n');
  assert.equal(ok(await access(['-c'], '', member)), 'FILECTL::LIMIT\n');
  assert.equal(ok(await access([], '', outsider)), 'TIME\n');
  assert.equal(ok(await access(['-c'], '', outsider)), '');
});

test('unsupported names are refused by the client before any write; dry runs write nothing', {
  skip,
}, async () => {
  const file = join(h.configDir, 'jg-e2-grpd', 'allowed_controls');
  ok(await access(['-w', '-g', 'jg-e2-grpd', '-c'], 'FILECTL::LIMIT\n'));
  const r = await access(['-w', '-g', 'jg-e2-grpd', '-c'], 'FILECTL::LIMIT\nTIME\nNOPE\n');
  assert.equal(r.code, 255);
  assert.equal(r.stderr, 'Error: Requested access to controls that are not available: TIME, NOPE\n\n');
  ok(await access(['-w', '-n', '-g', 'jg-e2-grpd', '-c'], 'FILECTL::MODE\n'));
  assert.equal(readFileSync(file, 'utf8'), 'FILECTL::LIMIT\n');
});

test('a user without CAP_SYS_ADMIN cannot write lists, and nothing changes', { skip }, async () => {
  ok(await access(['-w', '-u'], 'TIME\n'));
  const r = await access(['-w', '-u'], 'FILECTL::LIMIT\n', member);
  assert.equal(r.code, 255);
  assert.equal(
    r.stderr,
    'Error: Failed to set group signal access list, try with sudo or as "root" user (requires CAP_SYS_ADMIN)\n\n',
  );
  assert.equal(readFileSync(join(h.configDir, '0.DEFAULT_ACCESS', 'allowed_signals'), 'utf8'), 'TIME\n');
});

test("bad group names come back from the daemon with GEOPM's texts", { skip }, async () => {
  const r = await access(['-g', '7up']);
  assert.equal(r.code, 255);
  assert.equal(r.stderr, 'Error: Linux group name cannot begin with a digit: group = "7up"\n\n');
  const r2 = await access(['-w', '-g', 'jg-e2-no-such-group'], 'TIME\n');
  assert.equal(r2.code, 255);
  assert.equal(r2.stderr, 'Error: Linux group is not defined: group = "jg-e2-no-such-group"\n\n');
  assert.equal(existsSync(join(h.configDir, 'jg-e2-no-such-group')), false);
});

test('-D empties a list through the daemon', { skip }, async () => {
  ok(await access(['-w', '-g', 'jg-e2-grpd'], 'TIME\n'));
  ok(await access(['-D', '-g', 'jg-e2-grpd']));
  assert.equal(readFileSync(join(h.configDir, 'jg-e2-grpd', 'allowed_signals'), 'utf8'), '');
  assert.equal(
    ok(await access(['-g', 'jg-e2-grpd'])),
    'FILECTL::LIMIT\n',
    'the control list still grants reading',
  );
});

test('-F stores names this node lacks (lists shared by other nodes); reads still filter them', {
  skip,
}, async () => {
  ok(await access(['-w', '-F', '-g', 'jg-e2-grpd'], 'OTHER_NODE::ONLY\nTIME\n'));
  assert.equal(
    readFileSync(join(h.configDir, 'jg-e2-grpd', 'allowed_signals'), 'utf8'),
    'OTHER_NODE::ONLY\nTIME\n',
  );
  const listed = ok(await access(['-g', 'jg-e2-grpd']))
    .trim()
    .split('\n');
  assert.ok(listed.includes('TIME'));
  assert.ok(!listed.includes('OTHER_NODE::ONLY'), 'an unknown name is never granted');
});
