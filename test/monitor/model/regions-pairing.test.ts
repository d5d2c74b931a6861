import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pairRegionEvents } from '../../../src/monitor/model/regions-pairing.js';

describe('region pairing', () => {
  it('pairs recursive calls of one name innermost first', () => {
    const { calls, problems } = pairRegionEvents(
      [
        { name: 'f', kind: 'start', t: 0 },
        { name: 'f', kind: 'start', t: 1 },
        { name: 'f', kind: 'stop', t: 2 },
        { name: 'f', kind: 'stop', t: 5 },
      ],
      10,
    );
    assert.deepEqual(
      calls.map((c) => [c.start, c.stop, c.depth]),
      [
        [0, 5, 0],
        [1, 2, 1],
      ],
    );
    assert.deepEqual(problems, []);
  });

  it('closes an open region at the end and reports a stray stop', () => {
    const { calls, problems } = pairRegionEvents(
      [
        { name: 'a', kind: 'start', t: 1 },
        { name: 'b', kind: 'stop', t: 2 },
      ],
      7,
    );
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.stop, 7);
    assert.equal(calls[0]!.open, true);
    assert.equal(problems.length, 2);
  });
});
