import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expandHostlist } from '../../../src/cluster/job-report/hostlist.js';

describe('Slurm host lists', () => {
  it('expands Slurm host lists', () => {
    assert.deepEqual(expandHostlist('node[01-03,07],gpu5'), ['node01', 'node02', 'node03', 'node07', 'gpu5']);
    assert.deepEqual(expandHostlist('r[1-2]-n[8-9]'), ['r1-n8', 'r1-n9', 'r2-n8', 'r2-n9']);
    assert.deepEqual(expandHostlist('a,b,a'), ['a', 'b']);
    assert.throws(() => expandHostlist('node[1-'), /unbalanced brackets/);
    assert.throws(() => expandHostlist('node[3-1]'), /runs backwards/);
    assert.throws(() => expandHostlist(''), /names no host/);
  });
});
