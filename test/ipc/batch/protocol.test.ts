import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseServerStart, type ServerStart, serverStartLine } from '../../../src/ipc/batch/protocol.js';

const GOOD: ServerStart = {
  runDir: '/run/joulegate',
  key: '4242',
  clientUid: 1000,
  clientGid: 1000,
  signals: [{ name: 'TIME', domain: 0, idx: 0 }],
  controls: [{ name: 'CPU_FREQUENCY_MAX_CONTROL', domain: 2, idx: 3 }],
};

/** The refusal of `line`, asserted to be one line naming `field`. */
function refusal(line: string, field: RegExp): void {
  assert.throws(
    () => parseServerStart(line),
    (err: Error) => {
      assert.match(err.message, /batch start request/);
      assert.match(err.message, field);
      assert.doesNotMatch(err.message, /\n/);
      return true;
    },
  );
}

describe('batch server start request (launcher → server)', () => {
  test('the line the launcher builds parses back to the same request', () => {
    assert.deepEqual(parseServerStart(serverStartLine(GOOD)), GOOD);
  });

  test('a request missing a field is refused in one line naming it', () => {
    const { clientGid: _dropped, ...rest } = GOOD;
    refusal(JSON.stringify(rest), /clientGid/);
  });

  test('a field of the wrong type is refused in one line naming it', () => {
    refusal(JSON.stringify({ ...GOOD, clientUid: '1000' }), /clientUid/);
    refusal(
      JSON.stringify({ ...GOOD, signals: [{ name: 'TIME', domain: 0.5, idx: 0 }] }),
      /signals\.0\.domain/,
    );
    refusal(JSON.stringify({ ...GOOD, controls: 'none' }), /controls/);
  });

  test('a key that is not a pid and a negative uid are refused', () => {
    refusal(JSON.stringify({ ...GOOD, key: '../etc' }), /key/);
    refusal(JSON.stringify({ ...GOOD, clientUid: -1 }), /clientUid/);
  });

  test('a line that is not JSON is refused in one line', () => {
    refusal('{"runDir": "/run/joulegate",', /not JSON/);
  });
});
