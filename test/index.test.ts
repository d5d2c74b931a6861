import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as library from '../src/index.js';

test('the library entry exports the signal catalogue and its lookups', () => {
  assert.ok(library.SIGNAL_CATALOGUE.some((e) => e.alias === 'CPU_ENERGY'));
  assert.equal(library.entryNamed('POWERCAP::DRAM_ENERGY')?.group, 'ram');
  assert.deepEqual(
    library.exportedEntries().map((e) => e.metric.name),
    library.SIGNAL_CATALOGUE.flatMap((e) => (e.metric ? [e.metric.name] : [])),
  );
  assert.equal(library.ENERGY_DEVICE_OF_GROUP.cpu, 'package');
});
