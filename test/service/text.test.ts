import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shown } from '../../src/service/text.js';

test('names echoed in errors are bounded and printable', () => {
  assert.equal(shown('a\nb'), 'a?b');
  assert.equal(shown('x'.repeat(1000)).length, 81);
});
