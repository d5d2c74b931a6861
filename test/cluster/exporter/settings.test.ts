import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseListen } from '../../../src/cluster/exporter/settings.js';

describe('exporter options', () => {
  it('parses listen addresses', () => {
    assert.deepEqual(parseListen('127.0.0.1:9863'), { host: '127.0.0.1', port: 9863 });
    assert.deepEqual(parseListen('[::1]:80'), { host: '::1', port: 80 });
    assert.deepEqual(parseListen(':9863'), { host: '0.0.0.0', port: 9863 });
    assert.throws(() => parseListen('localhost'), /expected HOST:PORT/);
    assert.throws(() => parseListen('a:70000'), /expected HOST:PORT/);
  });
});
