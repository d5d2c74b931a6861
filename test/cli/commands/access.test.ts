import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { type RunResult, runCli } from '../../helpers/cli.js';
import { startPrivateBus } from '../../helpers/dbus.js';
import { FILE_CONTROLS_PLUGIN } from '../../helpers/file-controls.js';
import { needsRoot, needsTestUsers } from '../../helpers/requirements.js';
import { tempDir } from '../../helpers/tmp.js';
import { asUser, ensureGroup, ensureUser } from '../../helpers/users.js';

const asTestUsers = needsTestUsers();

const directWrites = needsRoot('writes the access lists directly, which only root may');

/** A 2-CPU node with nothing but topology: the catalog is TIME plus the FILECTL plugin. */
function sysroot(): string {
  const root = tempDir('joulegate-access-sysroot-');
  const cpu = join(root, 'sys/devices/system/cpu');
  for (const c of [0, 1]) {
    mkdirSync(join(cpu, `cpu${c}`, 'topology'), { recursive: true });
    writeFileSync(join(cpu, `cpu${c}`, 'topology', 'physical_package_id'), '0\n');
    writeFileSync(join(cpu, `cpu${c}`, 'topology', 'core_id'), `${c}\n`);
  }
  writeFileSync(join(cpu, 'online'), '0-1\n');
  return root;
}

function directEnv(): { env: Record<string, string>; config: string } {
  const config = join(tempDir('joulegate-access-config-'), 'geopm');
  return {
    config,
    env: {
      JOULEGATE_SYSROOT: sysroot(),
      JOULEGATE_CONFIG_PATH: config,
      JOULEGATE_PLUGIN_PATH: FILE_CONTROLS_PLUGIN,
      JOULEGATE_TEST_CONTROL_DIR: tempDir('joulegate-access-ctl-'),
      // Nothing listens here: any attempt to reach a daemon fails loudly.
      DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${join(tempDir(), 'no-bus')}`,
    },
  };
}

function access(args: string[], env: Record<string, string>, input = ''): Promise<RunResult> {
  return runCli(['access', ...args], { env, input });
}

function assertFails(r: RunResult, code: number, message: string): void {
  assert.equal(r.code, code, r.stderr);
  assert.equal(r.stderr, `Error: ${message}\n\n`);
  assert.equal(r.stdout, '');
}

const NO_DAEMON = { DBUS_SYSTEM_BUS_ADDRESS: 'unix:path=/nonexistent/joulegate-test-bus' };

test('option groups are mutually exclusive (status 2, argparse-style message)', async () => {
  const cases: [string[], string][] = [
    [['-u', '-g', 'root'], 'argument -g/--group: not allowed with argument -u/--default'],
    [['-a', '-l'], 'argument -l/--log: not allowed with argument -a/--all'],
    [['-g', 'root', '-a'], 'argument -a/--all: not allowed with argument -g/--group'],
    [['-w', '-D'], 'argument -D/--delete: not allowed with argument -w/--write'],
    [['-w', '-e'], 'argument -e/--edit: not allowed with argument -w/--write'],
    [['-w', '-n', '-F'], 'argument -F/--force: not allowed with argument -n/--dry-run'],
  ];
  for (const [args, message] of cases) assertFails(await access(args, NO_DAEMON), 2, message);
});

test('run-time checks fail with status 255 before contacting the service', async () => {
  const cases: [string[], string][] = [
    [['-a', '-w'], 'Option -a/--all cannot be used with -w/--write'],
    [['-l', '-D'], 'Option -l/--log cannot be used with -D/--delete'],
    [['-a', '-e'], 'Option -a/--all cannot be used with -e/--edit'],
    [['-n', '-e'], 'Option -n/--dry-run cannot be used with -e/--edit'],
    [['-n', '-D'], 'Option -n/--dry-run cannot be used with -D/--delete'],
    [['-F', '-e'], 'Option -F/--force cannot be used with -e/--edit'],
    [['-n'], 'Options -n/--dry-run and -F/--force only apply with -w/--write or -D/--delete'],
    [['-F', '-g', 'root'], 'Options -n/--dry-run and -F/--force only apply with -w/--write or -D/--delete'],
    [['-x'], 'Must specify either --group or --default with --direct.'],
    [['-x', '-w'], 'Must specify either --group or --default with --direct.'],
  ];
  for (const [args, message] of cases) assertFails(await access(args, NO_DAEMON), 255, message);
});

test('unknown options and stray arguments are usage errors, not stack traces', async () => {
  const r = await access(['--bogus'], NO_DAEMON);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /unknown option '--bogus'/);
  const r2 = await access(['extra'], NO_DAEMON);
  assert.notEqual(r2.code, 0);
  assert.doesNotMatch(r2.stderr + r2.stdout, /\n\s+at /);
});

test('-v prints the version', async () => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'));
  const r = await access(['-v'], NO_DAEMON);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, `${pkg.version}\n`);
});

const NOT_RUNNING =
  "The joulegate service is not running. Run with --direct, or install joulegated and run 'systemctl start joulegated'";

test('without a bus the service is reported as not running', async () => {
  assertFails(await access([], NO_DAEMON), 255, NOT_RUNNING);
  assertFails(await access(['-a', '-c'], NO_DAEMON), 255, NOT_RUNNING);
});

test('on a bus where nobody owns the name the service is reported as not running', async () => {
  const bus = await startPrivateBus();
  const env = { DBUS_SYSTEM_BUS_ADDRESS: bus.address, JOULEGATE_BUS_NAME: 'io.github.geopm' };
  assertFails(await access(['-u'], env), 255, NOT_RUNNING);
  assertFails(await access(['-w', '-g', 'root'], env, 'TIME\n'), 255, NOT_RUNNING);
});

test('--direct writes from stdin (blanks and # ignored) and reads back sorted, without a daemon', {
  skip: directWrites,
}, async () => {
  const { env, config } = directEnv();
  const w = await access(['-x', '-u', '-w'], env, '# site defaults\n\nTIME\n  FILECTL::KNOB_B\t\n');
  assert.equal(w.code, 0, w.stderr);
  assert.equal(w.stdout, '');
  const file = join(config, '0.DEFAULT_ACCESS', 'allowed_signals');
  assert.equal(readFileSync(file, 'utf8'), 'TIME\nFILECTL::KNOB_B\n');
  assert.equal(statSync(file).mode & 0o7777, 0o600);
  assert.equal(statSync(config).mode & 0o7777, 0o700);
  const r = await access(['-x', '-u'], env);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'FILECTL::KNOB_B\nTIME\n');

  // Controls are written separately and are readable as signals.
  const wc = await access(['-x', '-u', '-w', '-c'], env, 'FILECTL::KNOB_A\n');
  assert.equal(wc.code, 0, wc.stderr);
  assert.equal((await access(['-x', '-u', '-c'], env)).stdout, 'FILECTL::KNOB_A\n');
  assert.equal((await access(['-x', '-u'], env)).stdout, 'FILECTL::KNOB_A\nFILECTL::KNOB_B\nTIME\n');
});

test('--direct validates names against the node unless forced; dry runs write nothing', {
  skip: directWrites,
}, async () => {
  const { env, config } = directEnv();
  const file = join(config, '0.DEFAULT_ACCESS', 'allowed_signals');
  assertFails(
    await access(['-x', '-u', '-w'], env, 'TIME\nNOPE_ONE\nNOPE_TWO\n'),
    255,
    'Requested access to signals that are not available: NOPE_ONE, NOPE_TWO',
  );
  assertFails(
    await access(['-x', '-u', '-w', '-c'], env, 'TIME\n'),
    255,
    'Requested access to controls that are not available: TIME',
  );
  assert.equal(existsSync(file), false);
  const dry = await access(['-x', '-u', '-w', '-n'], env, 'TIME\n');
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(existsSync(file), false);
  assertFails(
    await access(['-x', '-u', '-w', '-n'], env, 'NOPE_ONE\n'),
    255,
    'Requested access to signals that are not available: NOPE_ONE',
  );
  const forced = await access(['-x', '-u', '-w', '-F'], env, 'NOPE_ONE\nTIME\n');
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(readFileSync(file, 'utf8'), 'NOPE_ONE\nTIME\n');
  // Unsupported names stay in the file (shared configs) but are not shown.
  assert.equal((await access(['-x', '-u'], env)).stdout, 'TIME\n');
});

test('--direct -D empties a list, keeping the file', { skip: directWrites }, async () => {
  const { env, config } = directEnv();
  ensureGroup('jg-e2-grpa');
  assert.equal((await access(['-x', '-g', 'jg-e2-grpa', '-w'], env, 'TIME\n')).code, 0);
  const d = await access(['-x', '-g', 'jg-e2-grpa', '-D'], env);
  assert.equal(d.code, 0, d.stderr);
  assert.equal(readFileSync(join(config, 'jg-e2-grpa', 'allowed_signals'), 'utf8'), '');
  assert.equal((await access(['-x', '-g', 'jg-e2-grpa'], env)).stdout, '');
});

test('--direct -e edits the current list in $EDITOR', { skip: directWrites }, async () => {
  const { env, config } = directEnv();
  assert.equal((await access(['-x', '-u', '-w'], env, 'TIME\n')).code, 0);
  // The "editor" appends a name and records what it was shown.
  const shown = join(tempDir(), 'shown');
  const editor = join(tempDir(), 'editor.sh');
  writeFileSync(editor, `#!/bin/sh\ncp "$1" ${shown}\necho FILECTL::KNOB_C >> "$1"\n`);
  chmodSync(editor, 0o755);
  const r = await access(['-x', '-u', '-e'], { ...env, EDITOR: editor });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(readFileSync(shown, 'utf8'), 'TIME\n');
  assert.equal(
    readFileSync(join(config, '0.DEFAULT_ACCESS', 'allowed_signals'), 'utf8'),
    'TIME\nFILECTL::KNOB_C\n',
  );
  // A failing editor writes nothing.
  const bad = await access(['-x', '-u', '-e'], { ...env, EDITOR: 'false' });
  assert.equal(bad.code, 255);
  assert.match(bad.stderr, /^Error: editor "false" exited with status 1; nothing written\n\n$/);
  assert.equal(
    readFileSync(join(config, '0.DEFAULT_ACCESS', 'allowed_signals'), 'utf8'),
    'TIME\nFILECTL::KNOB_C\n',
  );
});

test("--direct rejects bad group names with GEOPM's texts", { skip: directWrites }, async () => {
  const { env } = directEnv();
  assertFails(
    await access(['-x', '-g', '9lives'], env),
    255,
    'Linux group name cannot begin with a digit: group = "9lives"',
  );
  assertFails(
    await access(['-x', '-g', 'jg-e2-no-such-group', '-w'], env, 'TIME\n'),
    255,
    'Linux group is not defined: group = "jg-e2-no-such-group"',
  );
  assertFails(
    await access(['-x', '-g', 'a/b'], env),
    255,
    'Linux group name cannot contain "/" or be "." or "..": group = "a/b"',
  );
});

test('--direct quarantines an insecure list and reads it as empty', { skip: directWrites }, async () => {
  const { env, config } = directEnv();
  assert.equal((await access(['-x', '-u', '-w'], env, 'TIME\n')).code, 0);
  chmodSync(join(config, '0.DEFAULT_ACCESS', 'allowed_signals'), 0o644);
  const r = await access(['-x', '-u'], env);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(
    r.stderr,
    /allowed_signals has mode 0644, expected 0600; renamed to .*allowed_signals-[0-9a-f-]{36}-INVALID/,
  );
});

test('--direct by a non-root user is refused without touching the lists', { skip: asTestUsers }, async () => {
  const { env, config } = directEnv();
  assert.equal((await access(['-x', '-u', '-w'], env, 'TIME\n')).code, 0);
  const user = ensureUser('jg-e2-dave');
  const r = await runCli(['access', '-x', '-u'], { env, prefix: [...asUser(user), 'env', ...envWords(env)] });
  assert.equal(r.code, 255);
  assert.match(
    r.stderr,
    /^Error: --direct works on the access list files, which only their owner \(uid 0\) may use/,
  );
  assert.equal(readFileSync(join(config, '0.DEFAULT_ACCESS', 'allowed_signals'), 'utf8'), 'TIME\n');
});

function envWords(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}
