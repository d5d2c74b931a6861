import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerModeFromEnv } from '../../src/service/answer-mode.js';

test('JOULEGATE_STRICT_ERRORS: unset, empty or 0 is GEOPM-style, 1 strict, anything else refused naming it', () => {
  assert.equal(answerModeFromEnv({}), 'geopm');
  assert.equal(answerModeFromEnv({ JOULEGATE_STRICT_ERRORS: '' }), 'geopm');
  assert.equal(answerModeFromEnv({ JOULEGATE_STRICT_ERRORS: '0' }), 'geopm');
  assert.equal(answerModeFromEnv({ JOULEGATE_STRICT_ERRORS: '1' }), 'strict');
  for (const bad of ['yes', 'true', '2', ' 1'])
    assert.throws(
      () => answerModeFromEnv({ JOULEGATE_STRICT_ERRORS: bad }),
      /JOULEGATE_STRICT_ERRORS must be 0 or 1/,
    );
});
