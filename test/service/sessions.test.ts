import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SessionSchema } from '../../src/service/sessions.js';

test('session records are validated strictly', () => {
  const ok = {
    client_pid: 5,
    client_uid: 0,
    client_gid: 0,
    create_time: 1,
    start_ticks: 2,
    signals: [],
    controls: [],
  };
  assert.ok(SessionSchema.safeParse(ok).success);
  assert.ok(!SessionSchema.safeParse({ ...ok, extra: 1 }).success);
  assert.ok(!SessionSchema.safeParse({ ...ok, client_pid: -1 }).success);
  assert.ok(!SessionSchema.safeParse({ ...ok, start_ticks: undefined }).success);
});
