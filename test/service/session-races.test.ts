import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ERROR_NAMES } from '../../src/ipc/dbus/interface.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { ensureUser } from '../helpers/users.js';
import { ServiceHarness, STRICT_ANSWERS, waitFor } from './harness.js';

const skip = needsDaemon();

// A client may send calls without waiting for replies. A call that needs a session must see
// the session as it is when its state change happens: closing the session and asking for write
// mode back to back must never leave write mode with a process that has no watched session.

const h = new ServiceHarness(STRICT_ANSWERS);
await whenMet(skip, () => h.setup());
await whenMet(skip, () => h.startDaemon());

const racer = whenMet(skip, () => ensureUser('jgsvc_racer'));
await whenMet(skip, () =>
  h.client([{ call: 'platformSetGroupAccess', args: ['', ['FILECTL::COUNTER'], ['FILECTL::LIMIT']] }]),
);

/** Pid in CONTROL_LOCK; '' while free (the file exists only once write mode was first taken). */
const lockHolder = () => {
  const path = join(h.runDir, 'CONTROL_LOCK');
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : '';
};
const ROUNDS = 10;

const racingCalls: [string, object][] = [
  ['PlatformWriteControl', { call: 'platformWriteControl', args: ['FILECTL::LIMIT', 1, 0, 7] }],
  ['PlatformRestoreControl', { call: 'platformRestoreControl' }],
  [
    'PlatformStartBatch',
    { call: 'platformStartBatch', args: [[], [{ domain: 1, idx: 0, name: 'FILECTL::LIMIT' }]] },
  ],
];

for (const [method, call] of racingCalls) {
  test(`PlatformCloseSession then ${method} back to back: no session, no write mode left behind`, {
    skip,
  }, async () => {
    // Each round is a new client process that opens a session, sends both calls and exits.
    for (let round = 0; round < ROUNDS; round++) {
      const [opened, closed, raced] = await h.client(
        [{ call: 'platformOpenSession' }, { together: [{ call: 'platformCloseSession' }, call] }],
        { user: racer, setsid: true },
      );
      assert.equal(opened!.ok, true, opened!.message);
      assert.equal(closed!.ok, true, closed!.message);
      // The client has exited: nobody holds write mode and the control was never changed.
      assert.ok(
        await waitFor(() => lockHolder() === '', 3000),
        `round ${round}: CONTROL_LOCK held by ${lockHolder()} after its client exited`,
      );
      assert.equal(h.control('FILECTL-LIMIT-0'), '100');
      // The close arrived first, so the racing call found no session.
      assert.equal(raced!.name, ERROR_NAMES.NoSession, `round ${round}: ${JSON.stringify(raced)}`);
    }
  });
}
