import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { promqlRegexLiteral } from '../../../src/cluster/job-report/prometheus.js';

describe('PromQL', () => {
  it('escapes node names for a PromQL regex', () => {
    assert.equal(promqlRegexLiteral('n1.cluster'), 'n1\\\\.cluster');
    assert.equal(promqlRegexLiteral('a"b'), 'a\\"b');
  });
});
