import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ExportedCounter } from '../../../src/cluster/exporter/counter.js';

describe('exporter counter', () => {
  it('publishes 0 at start, then the source increases; a source restart adds nothing for that step', () => {
    const c = new ExportedCounter();
    assert.deepEqual(
      [5000, 5010, 5012.5, 3, 7].map((v) => c.feed(v)),
      [0, 10, 12.5, 12.5, 16.5],
    );
    assert.equal(c.restarts, 1);
  });
});
