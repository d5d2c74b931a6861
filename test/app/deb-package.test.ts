import assert from 'node:assert/strict';
import { cpSync, existsSync, lstatSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DAEMON, run, runCli } from '../helpers/cli.js';
import { needsRoot, needsTool, requirements } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';

/*
 * The Debian package (scripts/package-deb.mjs, docs/packaging.md), built from dist/ and installed
 * into a throwaway root with `dpkg --root=DIR --force-script-chrootless`: dpkg keeps its database
 * in DIR/var/lib/dpkg and runs the maintainer scripts on this machine with DPKG_ROOT=DIR, which
 * they pass to systemd-sysusers and systemd-tmpfiles as --root. The host's dpkg database, /etc and
 * systemd are never touched (dpkg would chroot into DIR otherwise, which holds no shell).
 */

const skip = requirements(
  needsRoot('dpkg installs files owned by root into the throwaway root'),
  needsTool(
    'dpkg-deb',
    'dpkg-shlibdeps',
    'lintian',
    'systemd-analyze',
    'systemd-sysusers',
    'systemd-tmpfiles',
  ),
);
const REPO = new URL('../../', import.meta.url).pathname;
const PACKAGING = join(REPO, 'packaging');
/** Units need the targets and sockets they name: the host's units, copied into the root. */
const HOST_UNITS = '/usr/lib/systemd/system';

async function buildDeb(): Promise<string> {
  const out = tempDir('jg-deb-');
  const r = await run(process.execPath, [join(REPO, 'scripts/package-deb.mjs'), '--out', out], {
    timeoutMs: 300_000,
  });
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
}

function dpkg(root: string, args: string[]) {
  return run('dpkg', [`--root=${root}`, '--force-script-chrootless', '--force-depends', ...args], {
    timeoutMs: 120_000,
  });
}

/** A root dpkg can install into: an empty database. */
function throwawayRoot(): string {
  const root = tempDir('jg-deb-root-');
  for (const d of ['var/lib/dpkg/info', 'var/lib/dpkg/updates', 'etc', 'usr/lib/systemd/system'])
    mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, 'var/lib/dpkg/status'), '');
  return root;
}

test('the .deb installs into a throwaway root with everything in place, verifies, passes lintian and purges clean', {
  skip,
  timeout: 900_000,
}, async () => {
  const deb = await buildDeb();
  const lintian = await run('lintian', [deb], { timeoutMs: 300_000 });
  const errors = lintian.stdout.split('\n').filter((l) => l.startsWith('E:'));
  assert.deepEqual(errors, [], lintian.stdout);

  const contents = (await run('dpkg-deb', ['--contents', deb])).stdout;
  const root = throwawayRoot();
  const installed = await dpkg(root, ['--install', deb]);
  assert.equal(installed.code, 0, installed.stderr);

  // Each file where systemd, D-Bus and dpkg read it.
  for (const path of [
    'usr/lib/systemd/system/joulegated.service',
    'usr/lib/systemd/system/joulegate-exporter.service',
    'usr/share/dbus-1/system-services/io.github.geopm.service',
    'usr/share/dbus-1/system.d/io.github.geopm.conf',
    'usr/lib/tmpfiles.d/joulegated.conf',
    'usr/lib/sysusers.d/joulegate-exporter.conf',
    'etc/default/joulegated',
    'etc/default/joulegate-exporter',
    'usr/share/joulegate/slurm/slurm-epilog-job-energy.sh',
  ])
    assert.ok(existsSync(join(root, path)), `${path} not installed`);
  assert.equal(
    readFileSync(join(root, 'var/lib/dpkg/info/joulegate.conffiles'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .sort()
      .join(' '),
    '/etc/default/joulegate-exporter /etc/default/joulegated',
  );
  // The maintainer scripts ran against the root: sysusers made the user, tmpfiles the dirs.
  assert.match(readFileSync(join(root, 'etc/passwd'), 'utf8'), /^joulegate-exporter:x:\d+:\d+:/m);
  assert.equal(statSync(join(root, 'run/geopm')).mode & 0o7777, 0o711);
  assert.equal(statSync(join(root, 'etc/geopm')).mode & 0o7777, 0o700);
  // The commands are links in /usr/bin to the app, and run from there.
  for (const cmd of ['joulegate', 'joulegated', 'geopmread', 'geopmwrite', 'geopmsession', 'geopmaccess'])
    assert.ok(lstatSync(join(root, 'usr/bin', cmd)).isSymbolicLink(), cmd);
  const version = await run(join(root, 'usr/bin/joulegated'), ['--version']);
  assert.equal(version.code, 0, version.stderr);
  assert.match(version.stdout, /^joulegated \d+\.\d+\.\d+\n$/);
  const help = await run(join(root, 'usr/bin/joulegate'), ['--help']);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /monitor/);

  // The installed units verify against the root: ExecStart's /usr/bin commands are found there.
  cpSync(HOST_UNITS, join(root, HOST_UNITS), { recursive: true, force: false });
  for (const unit of ['joulegated.service', 'joulegate-exporter.service']) {
    const text = readFileSync(join(root, 'usr/lib/systemd/system', unit), 'utf8');
    assert.match(text, /^ExecStart=\/usr\/bin\/joulegated? ?/m);
    const r = await run('systemd-analyze', ['verify', `--root=${root}`, unit], { cwd: root });
    assert.equal(r.code, 0, `${unit}: ${r.stderr}`);
    assert.equal(r.stderr, '', `${unit}: ${r.stderr}`);
  }

  const purged = await dpkg(root, ['--purge', 'joulegate']);
  assert.equal(purged.code, 0, purged.stderr);
  const ours = contents
    .split('\n')
    .map((l) => /\s\.\/(\S+?)(?: -> .*)?$/.exec(l)?.[1])
    .filter((p): p is string => p !== undefined && p !== '' && !p.endsWith('/'));
  assert.ok(ours.length > 50, `${ours.length} files in the package`);
  const left = ours.filter((p) => existsSync(join(root, p)));
  assert.deepEqual(left, [], 'files left after purge');
});

test('the units as shipped for npm installs find the commands under /usr/local or /usr', {
  skip: requirements(needsTool('systemd-analyze')),
}, async () => {
  for (const prefix of ['usr/local', 'usr']) {
    const root = tempDir('jg-units-root-');
    cpSync(HOST_UNITS, join(root, HOST_UNITS), { recursive: true });
    mkdirSync(join(root, prefix, 'bin'), { recursive: true });
    // An executable file stands for each command (verify resolves links inside the root).
    for (const cmd of ['joulegate', 'joulegated'])
      writeFileSync(join(root, prefix, 'bin', cmd), '#!/bin/sh\n', { mode: 0o755 });
    for (const unit of ['joulegated.service', 'joulegate-exporter.service']) {
      cpSync(join(PACKAGING, unit), join(root, 'etc/systemd/system', unit));
      const r = await run('systemd-analyze', ['verify', `--root=${root}`, unit], { cwd: root });
      assert.equal(r.code, 0, `${prefix}: ${unit}: ${r.stderr}`);
      assert.equal(r.stderr, '', `${prefix}: ${unit}: ${r.stderr}`);
    }
  }
});

test('/etc/default/joulegated lists every variable `joulegated --help` names', async () => {
  const help = await run(process.execPath, [DAEMON, '--help']);
  assert.equal(help.code, 0, help.stderr);
  const variables = [...help.stdout.matchAll(/^ {2}([A-Z_]+) /gm)].map((m) => m[1]!);
  assert.ok(variables.length >= 10, help.stdout);
  const defaults = readFileSync(join(PACKAGING, 'default/joulegated'), 'utf8');
  for (const v of variables) assert.match(defaults, new RegExp(`^#${v}=`, 'm'), `${v} missing`);
  const listed = [...defaults.matchAll(/^#([A-Z_]+)=/gm)].map((m) => m[1]!);
  assert.deepEqual(listed.sort(), [...variables].sort());
});

test('joulegated --version prints the version, an unknown argument is one line and status 2', async () => {
  const version = await run(process.execPath, [DAEMON, '--version']);
  assert.equal(version.code, 0, version.stderr);
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  assert.equal(version.stdout, `joulegated ${pkg.version}\n`);
  const bad = await run(process.execPath, [DAEMON, '--listen']);
  assert.equal(bad.code, 2);
  assert.equal(bad.stdout, '');
  assert.equal(bad.stderr, 'joulegated: unknown argument "--listen" (see joulegated --help)\n');
});

test('/etc/default/joulegate-exporter sets every flag of `joulegate exporter` through its variable', async () => {
  const help = await runCli(['exporter', '--help']);
  assert.equal(help.code, 0, help.stderr);
  const flags = [...help.stdout.matchAll(/^ +(?:-\w, )?(--[a-z.-]+)/gm)]
    .map((m) => m[1]!)
    .filter((f) => f !== '--help');
  // commander wraps the help: "(env: NAME)" may span lines.
  const envs = [...help.stdout.replace(/\s+/g, ' ').matchAll(/env: ([A-Z_]+)\)/g)].map((m) => m[1]!);
  assert.equal(envs.length, flags.length, `a flag without a variable: ${help.stdout}`);
  const defaults = readFileSync(join(PACKAGING, 'default/joulegate-exporter'), 'utf8');
  for (const v of envs) assert.match(defaults, new RegExp(`^#${v}=`, 'm'), `${v} missing`);
  // A variable works as its flag does: a bad value is the flag's one-line error.
  const bad = await runCli(['exporter'], { env: { JOULEGATE_EXPORTER_MAX_CONSUMERS: 'many' } });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /--max-consumers "many": expected a whole number/);
});
