import { execFileSync } from 'node:child_process';
import { TEST_ACCOUNT } from './accounts.mjs';

/**
 * Real unprivileged users and groups for tests that need other uids (tests run as root in CI).
 * Creation is idempotent and tolerates a parallel test file creating the same user. Test files
 * share accounts, so none removes its own: scripts/run-tests.mjs removes every account the run
 * added once all files are done (names must match TEST_ACCOUNT for that).
 */
export interface TestUser {
  name: string;
  uid: number;
  gid: number;
}

function idOf(kind: 'passwd' | 'group', name: string): number | undefined {
  try {
    const line = execFileSync('getent', [kind, name], { encoding: 'utf8' }).trim();
    return Number(line.split(':')[2]);
  } catch {
    return undefined;
  }
}

function checkName(name: string): void {
  if (!TEST_ACCOUNT.test(name)) throw new Error(`test account ${name} does not match ${TEST_ACCOUNT}`);
}

function retrying(fn: () => void, exists: () => boolean): void {
  for (let i = 0; i < 20 && !exists(); i++) {
    try {
      fn();
    } catch {
      // another test file may hold /etc/passwd's lock; look again and retry
      execFileSync('sleep', ['0.2']);
    }
  }
  if (!exists()) throw new Error('could not create test user/group');
}

export function ensureGroup(name: string): number {
  checkName(name);
  retrying(
    () => execFileSync('groupadd', ['-f', name], { stdio: 'ignore' }),
    () => idOf('group', name) !== undefined,
  );
  return idOf('group', name)!;
}

/** Creates (or reuses) a system user with no login shell, member of `groups`. */
export function ensureUser(name: string, groups: string[] = []): TestUser {
  checkName(name);
  for (const g of groups) ensureGroup(g);
  retrying(
    () =>
      execFileSync(
        'useradd',
        ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', name],
        { stdio: 'ignore' },
      ),
    () => idOf('passwd', name) !== undefined,
  );
  if (groups.length > 0) {
    retrying(
      () => execFileSync('usermod', ['-a', '-G', groups.join(','), name], { stdio: 'ignore' }),
      () => {
        const out = execFileSync('id', ['-Gn', name], { encoding: 'utf8' }).split(/\s+/);
        return groups.every((g) => out.includes(g));
      },
    );
  }
  return { name, uid: idOf('passwd', name)!, gid: idOf('group', name)! };
}

/** Command prefix that runs a program as `user` with its NSS groups and no capabilities. */
export function asUser(user: TestUser): string[] {
  return ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups', '--reset-env', '--'];
}
