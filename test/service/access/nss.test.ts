import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  groupNamesOf,
  groupNamesOfAsync,
  userById,
  userByIdAsync,
  userByName,
} from '../../../src/service/access/nss.js';
import { needsTestUsers } from '../../helpers/requirements.js';
import { ensureUser } from '../../helpers/users.js';

const skip = needsTestUsers();

// The daemon asks NSS off the event loop (a slow directory server must not stall every client);
// the answers are those of the synchronous lookups the CLI uses.

test('lookups off the event loop answer as the synchronous ones', { skip }, async () => {
  const groups = ['jgsvc_nss_a', 'jgsvc_nss_b'];
  const user = ensureUser('jgsvc_nss', groups);
  const entry = userByName(user.name)!;
  assert.deepEqual(await userByIdAsync(user.uid), userById(user.uid));
  assert.deepEqual((await userByIdAsync(user.uid))!.name, user.name);
  const names = await groupNamesOfAsync(entry);
  assert.deepEqual(names.sort(), groupNamesOf(entry).sort());
  for (const g of [...groups, user.name]) assert.ok(names.includes(g), `${g} missing from ${names}`);
  assert.equal(await userByIdAsync(2_000_000_123), undefined);
});
