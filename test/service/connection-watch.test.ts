import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionDepartures } from '../../src/service/connection-watch.js';

test('a watch aborts when its connection leaves, and only watched connections are kept', async () => {
  const departures = new ConnectionDepartures(async () => true);
  const a = departures.watch(':1.5');
  const b = departures.watch(':1.5');
  const other = departures.watch(':1.6');
  assert.equal(departures.size, 2);
  departures.left(':1.5');
  assert.equal(a.gone.aborted, true);
  assert.equal(b.gone.aborted, true);
  assert.match(String(a.gone.reason.message), /connection :1\.5 left the bus/);
  assert.equal(other.gone.aborted, false);
  a.release();
  other.release();
  other.release();
  assert.equal(departures.size, 0);
  departures.left(':1.9'); // never watched: nothing to do
});

test('a connection that left before the watch began is found gone by asking the bus', async () => {
  const departures = new ConnectionDepartures(async (name) => name !== ':1.7');
  const gone = departures.watch(':1.7');
  const here = departures.watch(':1.8');
  await new Promise((r) => setImmediate(r));
  assert.equal(gone.gone.aborted, true);
  assert.equal(here.gone.aborted, false);
  here.release();
  assert.equal(departures.size, 0);
});
