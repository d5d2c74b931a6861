import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ExportedCounter } from '../../../src/cluster/exporter/counter.js';
import {
  advanceAcrossRestart,
  CounterStateStore,
  parseCounterState,
  STATE_FILE,
} from '../../../src/cluster/exporter/counter-state.js';
import { tempDir } from '../../helpers/tmp.js';

test('advance across a restart: plain, wrapped once (range known), unknown without the range', () => {
  assert.equal(advanceAcrossRestart(100, 130, undefined), 30);
  // The old process had extended past two wraps (last = raw 40 + 2 × 1000); the new one reads raw 70.
  assert.equal(advanceAcrossRestart(2040, 70, 1000), 30);
  // No wrap in the old process, one while down: 990 → 20 is 30 across the wrap.
  assert.equal(advanceAcrossRestart(990, 20, 1000), 30);
  assert.equal(advanceAcrossRestart(990, 20, undefined), undefined);
  assert.equal(advanceAcrossRestart(990, 1500, 1000), 510, 'at or above the old value: the difference');
  assert.equal(advanceAcrossRestart(2040, 1200, 1000), undefined, 'a reading beyond the range is not raw');
});

test('a resumed counter adds the advance once and counts on; without it the total still continues', () => {
  const c = new ExportedCounter();
  c.resume({ last: 990, total: 50 }, 1000);
  assert.equal(c.feed(20), 80);
  assert.equal(c.resumed, 'continued');
  assert.equal(c.feed(25), 85);
  const unknown = new ExportedCounter();
  unknown.resume({ last: 990, total: 50 }, undefined);
  assert.equal(unknown.feed(20), 50, 'never less than the saved total');
  assert.equal(unknown.resumed, 'advance-unknown');
  assert.equal(unknown.feed(30), 60);
});

test('state files: what is refused, in one line each', () => {
  const good = {
    format: 1,
    node: 'n1',
    bootId: 'b',
    counters: { 'm/0': { signal: 'CPU_ENERGY', last: 1, total: 2 } },
  };
  assert.deepEqual(parseCounterState(JSON.stringify(good)), good);
  const bad: [string, RegExp][] = [
    ['{', /^not JSON$/],
    [JSON.stringify({ ...good, format: 2 }), /^format: /],
    [
      JSON.stringify({ ...good, counters: { 'm/0': { signal: 'X', last: 1, total: -1 } } }),
      /^counters\.m\/0\.total: /,
    ],
    [
      JSON.stringify({ ...good, counters: { 'm/0': { signal: 'X', last: 'NaN', total: 1 } } }),
      /^counters\.m\/0\.last: /,
    ],
    ['[]', /^top level: /],
  ];
  for (const [text, message] of bad) assert.throws(() => parseCounterState(text), { message }, text);
});

test('the store saves atomically with mode 0600 and resumes only its own node on its own boot', () => {
  const dir = join(tempDir('jg-counter-state-'), 'made');
  const lines: string[] = [];
  const store = new CounterStateStore(dir, 'n1', 'boot-a', (l) => lines.push(l));
  assert.deepEqual(store.load(), new Map(), 'nothing saved yet, and nothing to say');
  assert.equal(lines.length, 0);
  const counters = new Map([
    ['joulegate_package_energy_joules_total/0', { signal: 'CPU_ENERGY', last: 7.5, total: 3 }],
  ]);
  store.save(counters);
  assert.deepEqual(new CounterStateStore(dir, 'n1', 'boot-a', (l) => lines.push(l)).load(), counters);
  assert.deepEqual(new CounterStateStore(dir, 'n1', 'boot-b', (l) => lines.push(l)).load(), new Map());
  assert.match(lines.pop()!, /from an earlier boot/);
  assert.deepEqual(new CounterStateStore(dir, 'n2', 'boot-a', (l) => lines.push(l)).load(), new Map());
  assert.match(lines.pop()!, /it is node "n1"'s/);
  assert.deepEqual(new CounterStateStore(dir, 'n1', undefined, (l) => lines.push(l)).load(), new Map());
  assert.match(lines.pop()!, /this boot has no id/);
  writeFileSync(join(dir, STATE_FILE), 'x'.repeat((1 << 20) + 1));
  assert.deepEqual(new CounterStateStore(dir, 'n1', 'boot-a', (l) => lines.push(l)).load(), new Map());
  assert.match(lines.pop()!, /not a counter state \(larger than 1048576 bytes\)/);
  assert.match(readFileSync(join(dir, STATE_FILE), 'utf8'), /^x+$/, 'a refused file is left for the admin');
});
