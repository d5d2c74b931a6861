// The system users and groups the tests create, and their removal. Every test account name starts
// with one of these prefixes (test/helpers/users.ts refuses others), so scripts/run-tests.mjs can
// remove, after the run, exactly the accounts that the run added.
import { execFileSync } from 'node:child_process';

export const TEST_ACCOUNT = /^(jg-|jgsvc_|joulegate-)/;

function names(database) {
  const out = execFileSync('getent', [database], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((line) => line.split(':')[0])
    .filter((name) => name && TEST_ACCOUNT.test(name));
}

/** Test accounts that exist now. */
export function testAccounts() {
  return { users: names('passwd'), groups: names('group') };
}

/**
 * Removes the test accounts that did not exist in `before` (users first: a user's primary group
 * can only go once the user has). Returns what was removed and what could not be.
 */
export function removeTestAccounts(before) {
  const now = testAccounts();
  const removed = [];
  const failed = [];
  const attempt = (cmd, name) => {
    try {
      execFileSync(cmd, [name], { stdio: 'ignore' });
      removed.push(name);
    } catch {
      failed.push(`${cmd} ${name}`);
    }
  };
  for (const user of now.users) if (!before.users.includes(user)) attempt('userdel', user);
  const groupsLeft = testAccounts().groups;
  for (const group of groupsLeft) if (!before.groups.includes(group)) attempt('groupdel', group);
  return { removed, failed };
}
