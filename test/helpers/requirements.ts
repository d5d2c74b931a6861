import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { release } from 'node:os';
import { delimiter, join } from 'node:path';

/*
 * What a test needs from the machine, as the `skip` option of node:test's test/describe/it:
 * `false` when the machine has it, otherwise the reason the test cannot run here. Locally a
 * missing requirement is a skip with its reason (scripts/run-tests.mjs lists them at the end);
 * with JOULEGATE_TEST_STRICT=1 (.ci/run sets it) asking for a requirement the machine lacks
 * throws instead, so CI fails rather than quietly testing less.
 *
 *   test('…', { skip: needsRoot('runs clients as test users') }, async () => { … });
 *   const skip = requirements(needsRoot('starts joulegated'), needsTool('dbus-daemon'));
 */

/** A reason to skip, or false when the test can run. */
export type Skip = string | false;

export const STRICT_VARIABLE = 'JOULEGATE_TEST_STRICT';

/** The Debian package of each tool a test may need, named in the reason (.ci/run installs them). */
const DEBIAN_PACKAGE: Record<string, string> = {
  busctl: 'systemd',
  chromium: 'chromium',
  curl: 'curl',
  'dbus-daemon': 'dbus-daemon',
  'dbus-send': 'dbus-bin',
  'dpkg-deb': 'dpkg',
  'dpkg-shlibdeps': 'dpkg-dev',
  gcc: 'gcc',
  groupadd: 'passwd',
  h5dump: 'hdf5-tools',
  munged: 'munge',
  lintian: 'lintian',
  mount: 'mount',
  npm: 'npm',
  openssl: 'openssl',
  prometheus: 'prometheus',
  promtool: 'prometheus',
  python3: 'python3',
  script: 'bsdutils',
  scontrol: 'slurm-client',
  setpriv: 'util-linux',
  setsid: 'util-linux',
  sinfo: 'slurm-client',
  slurmctld: 'slurmctld',
  slurmd: 'slurmd',
  srun: 'slurm-client',
  'systemd-analyze': 'systemd',
  'systemd-sysusers': 'systemd',
  'systemd-tmpfiles': 'systemd',
  unshare: 'util-linux',
  useradd: 'passwd',
  usermod: 'passwd',
};

function strict(): boolean {
  const value = process.env[STRICT_VARIABLE];
  return value !== undefined && value !== '' && value !== '0';
}

/** `reason` as a skip, or a thrown error in strict mode. */
function missing(reason: string): Skip {
  if (strict()) throw new Error(`${reason} (${STRICT_VARIABLE} is set: every requirement must be met)`);
  return reason;
}

function onPath(tool: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, tool), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** The test acts as root: creates users, runs programs as them, starts joulegated, writes /run. */
export function needsRoot(why: string): Skip {
  if (process.getuid?.() === 0) return false;
  return missing(`needs root: ${why}`);
}

/** Every tool in `tools` must be an executable on PATH. */
export function needsTool(...tools: string[]): Skip {
  const absent = tools.filter((tool) => !onPath(tool));
  if (absent.length === 0) return false;
  const named = absent.map((tool) => {
    const pkg = DEBIAN_PACKAGE[tool];
    return pkg ? `${tool} (Debian package ${pkg})` : tool;
  });
  return missing(`needs ${named.join(', ')}: not on PATH`);
}

/** The running kernel must be `major`.`minor` or later (`why` says what the test needs of it). */
export function needsKernel(major: number, minor: number, why: string): Skip {
  const [have = 0, haveMinor = 0] = release()
    .split('.')
    .map((part) => Number.parseInt(part, 10));
  if (have > major || (have === major && haveMinor >= minor)) return false;
  return missing(`needs Linux ${major}.${minor} or later (this is ${release()}): ${why}`);
}

/**
 * `command` with `args` must run and exit 0 here: a probe of what the machine lets a test do
 * that no tool's presence tells (`why` says what).
 */
export function needsToRun(command: string, args: readonly string[], why: string): Skip {
  const r = spawnSync(command, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.status === 0) return false;
  const said = (r.stderr || String(r.error ?? `exit status ${r.status}`)).trim().split('\n')[0];
  return missing(`needs ${why} (\`${[command, ...args].join(' ')}\` failed: ${said})`);
}

/** /usr/bin/python3 must import `module` (`debianPackage` is named in the reason). */
export function needsPythonModule(module: string, debianPackage: string): Skip {
  const r = spawnSync('/usr/bin/python3', ['-c', `import ${module}`], { stdio: 'ignore' });
  if (r.status === 0) return false;
  return missing(`needs the Python module ${module} (Debian package ${debianPackage})`);
}

/** The first unmet requirement of several (all are checked, so strict mode names any). */
export function requirements(...skips: Skip[]): Skip {
  return skips.find((s) => s !== false) ?? false;
}

/** The test starts joulegated on a private bus (only root may own its name) and runs clients as test users. */
export function needsDaemon(): Skip {
  return requirements(
    needsRoot(
      'starts joulegated on a private bus, where only root may own its name, and runs clients as test users',
    ),
    needsTool('dbus-daemon', 'useradd', 'setpriv'),
  );
}

/** The test creates system users and runs programs as them, or gives files to them. */
export function needsTestUsers(): Skip {
  return requirements(
    needsRoot('creates test users and runs programs as them'),
    needsTool('useradd', 'setpriv'),
  );
}

/** The test compiles the fake vendor GPU libraries (test/fakes/) or another C helper. */
export function needsCompiler(): Skip {
  return needsTool('gcc');
}

/** The test reads HDF5 files back with h5py, as perun's importer does. */
export function needsH5py(): Skip {
  return needsPythonModule('h5py', 'python3-h5py');
}

/**
 * Runs a file's top-level set-up `step` only when `skip` is false. A file whose tests all need
 * something the machine lacks still loads (and lists its tests as skipped); the value is then an
 * empty object, which only test titles and destructuring touch: the tests that would use it are
 * skipped.
 */
export function whenMet<T>(skip: Skip, step: () => T): T {
  return skip === false ? step() : ({} as T);
}

/**
 * The test runs the CLI as an admin: with CAP_SYS_ADMIN it reads and writes the node itself;
 * anyone else also asks joulegated (and warns when it is unreachable).
 */
export function needsAdmin(): Skip {
  return needsRoot('runs the CLI as an admin, who reads and writes the node without joulegated');
}
