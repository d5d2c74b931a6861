import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  AccessLists,
  type Catalog,
  groupByName,
  groupNamesOf,
  MAX_LIST_FILE_BYTES,
  parseAccessList,
  resolveConfigDir,
  userById,
  userByName,
} from '../../../src/service/access/index.js';
import { secureMakeDirs, secureMakeFile } from '../../../src/service/secure-files.js';
import { needsTestUsers } from '../../helpers/requirements.js';
import { tempDir } from '../../helpers/tmp.js';
import { ensureGroup, ensureUser } from '../../helpers/users.js';

const skip = needsTestUsers();

const catalog: Catalog = {
  signals: ['CPU_ENERGY', 'CPU_POWER', 'TIME', 'CTL_FREQ', 'CTL_LIMIT'],
  controls: ['CTL_FREQ', 'CTL_LIMIT'],
};

function collectLog() {
  const lines: string[] = [];
  return { lines, log: (l: string) => lines.push(l) };
}

/** A config dir with lists written the way the daemon writes them (0700 dirs, 0600 files). */
function configWith(lists: Record<string, { signals?: string; controls?: string }>): string {
  const root = join(tempDir('joulegate-config-'), 'geopm');
  secureMakeDirs(root);
  for (const [dir, files] of Object.entries(lists)) {
    secureMakeDirs(join(root, dir));
    if (files.signals !== undefined) secureMakeFile(join(root, dir, 'allowed_signals'), files.signals);
    if (files.controls !== undefined) secureMakeFile(join(root, dir, 'allowed_controls'), files.controls);
  }
  return root;
}

test('the list format ignores blanks, # lines, surrounding spaces and tabs', { skip }, () => {
  assert.deepEqual(parseAccessList('\n  # comment\nA\n\tB  \n\n#C\n  D # not a comment\r\n'), [
    'A',
    'B',
    'D # not a comment',
  ]);
});

test('default lists are filtered to supported names, controls are readable, output sorted and unique', {
  skip,
}, () => {
  const root = configWith({
    '0.DEFAULT_ACCESS': {
      signals: '# site defaults\nTIME\n\tCPU_POWER\nNOT_ON_THIS_NODE\n@@ garbage line @@\nTIME\n\n',
      controls: 'CTL_LIMIT\nCPU_POWER\nGONE_CONTROL\n',
    },
  });
  const lists = new AccessLists({ configDir: root });
  assert.deepEqual(lists.getGroupAccess('', catalog), {
    // CTL_LIMIT comes from the controls list; CPU_POWER is not a control so only a signal.
    signals: ['CPU_POWER', 'CTL_LIMIT', 'TIME'],
    controls: ['CTL_LIMIT'],
  });
  assert.deepEqual(lists.getGroupAccess(undefined, catalog), lists.getGroupAccess('', catalog));
});

test('missing config dir, group dir or files grant nothing', { skip }, () => {
  const lists = new AccessLists({ configDir: join(tempDir(), 'nothing-here') });
  assert.deepEqual(lists.getGroupAccess('', catalog), { signals: [], controls: [] });
  const root = configWith({ '0.DEFAULT_ACCESS': {} });
  assert.deepEqual(new AccessLists({ configDir: root }).getGroupAccess('', catalog), {
    signals: [],
    controls: [],
  });
});

test('getAllAccess lists everything the node supports, sorted', { skip }, () => {
  const lists = new AccessLists({ configDir: tempDir() });
  assert.deepEqual(lists.getAllAccess(catalog), {
    signals: ['CPU_ENERGY', 'CPU_POWER', 'CTL_FREQ', 'CTL_LIMIT', 'TIME'],
    controls: ['CTL_FREQ', 'CTL_LIMIT'],
  });
});

for (const [what, spoil, reason] of [
  ['mode 0644', (p: string) => chmodSync(p, 0o644), /has mode 0644/],
  [
    'a non-daemon owner',
    (p: string) => {
      const u = ensureUser('jg-e2-owner');
      chownSync(p, u.uid, u.gid);
    },
    /is owned by uid/,
  ],
  [
    'a symlink to a secure file',
    (p: string) => {
      const elsewhere = join(tempDir(), 'elsewhere');
      secureMakeFile(elsewhere, 'TIME\n');
      unlinkSync(p);
      symlinkSync(elsewhere, p);
    },
    /is a symbolic link/,
  ],
] as const) {
  test(`an allow-list file with ${what} is quarantined and grants nothing`, { skip }, () => {
    const root = configWith({ '0.DEFAULT_ACCESS': { signals: 'TIME\n', controls: 'CTL_FREQ\n' } });
    spoil(join(root, '0.DEFAULT_ACCESS', 'allowed_signals'));
    const { lines, log } = collectLog();
    const got = new AccessLists({ configDir: root, log }).getGroupAccess('', catalog);
    // The untouched controls list still counts (its control is readable); the spoiled one not.
    assert.deepEqual(got, { signals: ['CTL_FREQ'], controls: ['CTL_FREQ'] });
    const left = readdirSync(join(root, '0.DEFAULT_ACCESS'));
    assert.ok(
      left.some((n) => /^allowed_signals-[0-9a-f-]{36}-INVALID$/.test(n)),
      left.join(' '),
    );
    assert.ok(!left.includes('allowed_signals'));
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, reason);
  });
}

test('a directory named like a group that is not 0700 is ignored, never renamed, with one warning', {
  skip,
}, () => {
  ensureGroup('jg-e2-grpa');
  const root = configWith({ 'jg-e2-grpa': { signals: 'TIME\n', controls: 'CTL_FREQ\n' } });
  chmodSync(join(root, 'jg-e2-grpa'), 0o755);
  const { lines, log } = collectLog();
  const lists = new AccessLists({ configDir: root, log });
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(lists.getGroupAccess('jg-e2-grpa', catalog), { signals: [], controls: [] });
  }
  assert.deepEqual(readdirSync(root).sort(), ['jg-e2-grpa']);
  assert.deepEqual(readdirSync(join(root, 'jg-e2-grpa')).sort(), ['allowed_controls', 'allowed_signals']);
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(lines[0]!, /ignoring access lists in .*jg-e2-grpa: it has mode 0755, expected 0700/);
  // An admin write does not rename it either: it is refused with the reason.
  assert.throws(() => lists.setGroupAccess('jg-e2-grpa', ['TIME'], undefined, catalog), {
    message: /Cannot write access lists: .*jg-e2-grpa has mode 0755, expected 0700; fix or remove it/,
  });
  // Fixed, the lists count again; broken anew, the warning comes back once.
  chmodSync(join(root, 'jg-e2-grpa'), 0o700);
  assert.deepEqual(lists.getGroupAccess('jg-e2-grpa', catalog).signals, ['CTL_FREQ', 'TIME']);
  chmodSync(join(root, 'jg-e2-grpa'), 0o750);
  lists.getGroupAccess('jg-e2-grpa', catalog);
  lists.getGroupAccess('jg-e2-grpa', catalog);
  assert.equal(lines.length, 2, lines.join('\n'));
  assert.match(lines[1]!, /has mode 0750/);
});

test('a config root writable by others is ignored (one warning) and never renamed, even on write', {
  skip,
}, () => {
  const root = configWith({ '0.DEFAULT_ACCESS': { signals: 'TIME\n' } });
  chmodSync(root, 0o777);
  const { lines, log } = collectLog();
  const lists = new AccessLists({ configDir: root, log });
  assert.deepEqual(lists.getGroupAccess('', catalog), { signals: [], controls: [] });
  assert.deepEqual(lists.getGroupAccess('', catalog), { signals: [], controls: [] });
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(lines[0]!, /ignoring access lists: .* is writable by group or others \(mode 0777\)/);
  assert.ok(statSync(join(root, '0.DEFAULT_ACCESS')).isDirectory(), 'left for the admin');
  assert.throws(() => lists.setGroupAccess('', ['CPU_POWER'], undefined, catalog), {
    message: /Cannot write access lists: .* is writable by group or others \(mode 0777\); fix or remove it/,
  });
  assert.equal(statSync(root).mode & 0o7777, 0o777);
  chmodSync(root, 0o700);
  lists.setGroupAccess('', ['CPU_POWER'], undefined, catalog);
  assert.deepEqual(lists.getGroupAccess('', catalog).signals, ['CPU_POWER']);
});

test('a list file over the size limit is ignored, not read, and logged once; writes that big are refused', {
  skip,
}, () => {
  const root = configWith({ '0.DEFAULT_ACCESS': { signals: 'TIME\n', controls: 'CTL_FREQ\n' } });
  const big = `${'CPU_POWER\n'.repeat(Math.ceil((MAX_LIST_FILE_BYTES + 1) / 10))}`;
  secureMakeFile(join(root, '0.DEFAULT_ACCESS', 'allowed_signals'), big);
  const { lines, log } = collectLog();
  const lists = new AccessLists({ configDir: root, log });
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(lists.getGroupAccess('', catalog), { signals: ['CTL_FREQ'], controls: ['CTL_FREQ'] });
  }
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(
    lines[0]!,
    new RegExp(
      `ignoring .*allowed_signals: ${big.length} bytes, more than the limit of ${MAX_LIST_FILE_BYTES}`,
    ),
  );
  // Left in place for the admin: only untrusted list files are moved aside.
  assert.equal(statSync(join(root, '0.DEFAULT_ACCESS', 'allowed_signals')).size, big.length);
  const many = Array.from({ length: 60_000 }, (_, i) => `NAME_${i}_${'X'.repeat(12)}`);
  assert.throws(() => lists.setGroupAccess('', many, undefined, catalog, { force: true }), {
    name: 'InvalidArgumentError',
    message: new RegExp(`Access list too large: \\d+ bytes, more than the limit of ${MAX_LIST_FILE_BYTES}`),
  });
});

test('lines that cannot be names are skipped with one warning naming the first', { skip }, () => {
  const root = configWith({
    '0.DEFAULT_ACCESS': { signals: `TIME\nCPU_POWER # inline note\n${'Y'.repeat(300)}\nCPU_ENERGY\n` },
  });
  const { lines, log } = collectLog();
  const lists = new AccessLists({ configDir: root, log });
  assert.deepEqual(lists.getGroupAccess('', catalog).signals, ['CPU_ENERGY', 'TIME']);
  assert.deepEqual(lists.getGroupAccess('', catalog).signals, ['CPU_ENERGY', 'TIME']);
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(
    lines[0]!,
    /allowed_signals: skipped 2 line\(s\) that cannot be names \(line 2: "CPU_POWER # inline note"\)/,
  );
});

test('a 0755 root-owned config root (as distributions ship it) is accepted', { skip }, () => {
  const root = configWith({ '0.DEFAULT_ACCESS': { signals: 'TIME\n' } });
  chmodSync(root, 0o755);
  const lists = new AccessLists({ configDir: root });
  assert.deepEqual(lists.getGroupAccess('', catalog).signals, ['TIME']);
  lists.setGroupAccess('', ['CPU_POWER'], undefined, catalog);
  assert.equal(statSync(root).mode & 0o7777, 0o755);
});

test('setGroupAccess writes 0600 files in 0700 dirs, one name per line in the given order', { skip }, () => {
  ensureGroup('jg-e2-grpa');
  const root = join(tempDir(), 'geopm');
  const lists = new AccessLists({ configDir: root });
  lists.setGroupAccess('jg-e2-grpa', ['TIME', 'CPU_POWER'], ['CTL_LIMIT'], catalog);
  const dir = join(root, 'jg-e2-grpa');
  assert.equal(statSync(root).mode & 0o7777, 0o700);
  assert.equal(statSync(dir).mode & 0o7777, 0o700);
  assert.equal(statSync(join(dir, 'allowed_signals')).mode & 0o7777, 0o600);
  assert.equal(readFileSync(join(dir, 'allowed_signals'), 'utf8'), 'TIME\nCPU_POWER\n');
  assert.equal(readFileSync(join(dir, 'allowed_controls'), 'utf8'), 'CTL_LIMIT\n');
  // undefined leaves a list alone; [] empties it (file kept, no names).
  lists.setGroupAccess('jg-e2-grpa', undefined, [], catalog);
  assert.equal(readFileSync(join(dir, 'allowed_signals'), 'utf8'), 'TIME\nCPU_POWER\n');
  assert.equal(readFileSync(join(dir, 'allowed_controls'), 'utf8'), '');
  assert.deepEqual(readdirSync(dir).sort(), ['allowed_controls', 'allowed_signals'], 'no temp files left');
});

test('setGroupAccess replaces a list atomically (new inode, old readers unaffected)', { skip }, () => {
  const root = configWith({ '0.DEFAULT_ACCESS': { signals: 'TIME\n' } });
  const file = join(root, '0.DEFAULT_ACCESS', 'allowed_signals');
  const before = statSync(file).ino;
  new AccessLists({ configDir: root }).setGroupAccess('', ['CPU_ENERGY'], undefined, catalog);
  assert.notEqual(statSync(file).ino, before);
  assert.equal(readFileSync(file, 'utf8'), 'CPU_ENERGY\n');
});

test("unsupported names are refused with GEOPM's message unless forced; dry runs write nothing", {
  skip,
}, () => {
  const root = join(tempDir(), 'geopm');
  const lists = new AccessLists({ configDir: root });
  assert.throws(() => lists.setGroupAccess('', ['TIME', 'NOPE_A', 'NOPE_B', 'NOPE_A'], undefined, catalog), {
    name: 'InvalidArgumentError',
    message: 'Requested access to signals that are not available: NOPE_A, NOPE_B',
  });
  assert.throws(() => lists.setGroupAccess('', undefined, ['TIME'], catalog), {
    message: 'Requested access to controls that are not available: TIME',
  });
  lists.setGroupAccess('', ['TIME'], undefined, catalog, { dryRun: true });
  assert.throws(() => statSync(root), /ENOENT/);
  lists.setGroupAccess('', ['NOPE_A', 'TIME'], undefined, catalog, { force: true });
  assert.equal(readFileSync(join(root, '0.DEFAULT_ACCESS', 'allowed_signals'), 'utf8'), 'NOPE_A\nTIME\n');
  // Forced names stay on disk but are filtered on read.
  assert.deepEqual(lists.getGroupAccess('', catalog).signals, ['TIME']);
  // Names that would not survive the file format are refused even when forced.
  assert.throws(() => lists.setGroupAccess('', ['A\nB'], undefined, catalog, { force: true }), {
    message: 'Invalid signals name in access list request: "A\\nB"',
  });
  assert.throws(
    () => lists.setGroupAccess('', ['#TIME'], undefined, catalog, { force: true }),
    /Invalid signals/,
  );
});

test("bad group names are rejected with GEOPM's texts", { skip }, () => {
  const lists = new AccessLists({ configDir: tempDir() });
  assert.throws(() => lists.getGroupAccess('1abc', catalog), {
    name: 'InvalidArgumentError',
    message: 'Linux group name cannot begin with a digit: group = "1abc"',
  });
  assert.throws(() => lists.getGroupAccess('jg-e2-no-such-group', catalog), {
    message: 'Linux group is not defined: group = "jg-e2-no-such-group"',
  });
  assert.throws(() => lists.setGroupAccess('../etc', ['TIME'], undefined, catalog), /cannot contain "\/"/);
  assert.throws(
    () => lists.setGroupAccess('..', ['TIME'], undefined, catalog),
    /cannot contain "\/" or be "\." or "\.\."/,
  );
  assert.throws(
    () => lists.setGroupAccess('0.DEFAULT_ACCESS', ['TIME'], undefined, catalog),
    /cannot begin with a digit/,
  );
});

test('getUserAccess unions the default list and every NSS group of the user', { skip }, () => {
  // Membership exists only in /etc/group: this process never had these groups.
  const user = ensureUser('jg-e2-alice', ['jg-e2-grpa', 'jg-e2-grpb']);
  ensureGroup('jg-e2-grpc');
  const root = configWith({
    '0.DEFAULT_ACCESS': { signals: 'TIME\n' },
    'jg-e2-grpa': { signals: 'CPU_ENERGY\n' },
    'jg-e2-grpb': { controls: 'CTL_FREQ\nNOT_HERE\n' },
    'jg-e2-grpc': { signals: 'CPU_POWER\n', controls: 'CTL_LIMIT\n' },
  });
  const lists = new AccessLists({ configDir: root });
  assert.deepEqual(lists.getUserAccess(user.name, catalog), {
    signals: ['CPU_ENERGY', 'CTL_FREQ', 'TIME'],
    controls: ['CTL_FREQ'],
  });
  // A user with no extra groups gets the default list only.
  const bob = ensureUser('jg-e2-bob');
  assert.deepEqual(lists.getUserAccess(bob.name, catalog), { signals: ['TIME'], controls: [] });
  assert.throws(() => lists.getUserAccess('jg-e2-nobody-here', catalog), {
    message: "Specified user 'jg-e2-nobody-here' does not exist.",
  });
});

test('getUserAccess includes the primary group lists', { skip }, () => {
  const user = ensureUser('jg-e2-carol');
  // useradd --user-group made a primary group named like the user.
  const root = configWith({ 'jg-e2-carol': { signals: 'CPU_POWER\n' } });
  assert.deepEqual(new AccessLists({ configDir: root }).getUserAccess(user.name, catalog).signals, [
    'CPU_POWER',
  ]);
});

test('config dir: env wins; the legacy dir is used only when the new one is absent, with a warning', {
  skip,
}, () => {
  const base = tempDir();
  const current = join(base, 'geopm');
  const legacy = join(base, 'geopm-service');
  const opts = (log: (l: string) => void) => ({ env: {}, log, defaultPath: current, legacyPath: legacy });
  let got = collectLog();
  assert.equal(resolveConfigDir(opts(got.log)), current);
  assert.deepEqual(got.lines, []);
  mkdirSync(legacy);
  got = collectLog();
  assert.equal(resolveConfigDir(opts(got.log)), legacy);
  assert.match(
    got.lines[0]!,
    /Using an old configuration directory .*geopm-service.* Migrate configuration data/,
  );
  mkdirSync(current);
  got = collectLog();
  assert.equal(resolveConfigDir(opts(got.log)), current);
  assert.match(got.lines[0]!, /Detected multiple configuration directories, ignoring .*geopm-service/);
  got = collectLog();
  assert.equal(resolveConfigDir({ ...opts(got.log), env: { JOULEGATE_CONFIG_PATH: '/x/y' } }), '/x/y');
  assert.deepEqual(got.lines, []);
});

test('NSS lookups resolve users and groups by name and id; unknown ones are undefined', { skip }, () => {
  const user = ensureUser('jg-e2-alice', ['jg-e2-grpa', 'jg-e2-grpb']);
  assert.deepEqual(userByName(user.name), { name: user.name, uid: user.uid, gid: user.gid });
  assert.deepEqual(userById(user.uid), { name: user.name, uid: user.uid, gid: user.gid });
  assert.equal(userById(0)?.name, 'root');
  assert.equal(userByName('jg-e2-nobody-here'), undefined);
  assert.equal(groupByName('jg-e2-no-such-group'), undefined);
  const grpa = groupByName('jg-e2-grpa')!;
  assert.equal(groupByName('root')?.gid, 0);
  assert.deepEqual(
    groupNamesOf(userByName(user.name)!).sort(),
    [user.name, 'jg-e2-grpa', 'jg-e2-grpb'].sort(),
  );
  assert.ok(grpa.gid > 0);
});
