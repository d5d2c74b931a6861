import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { CSV_ROWS_PER_CHUNK, csvChunks, renderCsv } from '../../src/report/csv.js';
import { writeUnique } from '../../src/report/files.js';
import { jsonChunks } from '../../src/report/json.js';
import { tempDir } from '../helpers/tmp.js';

describe('report files are written whole, in pieces', () => {
  it('writes a string over 1 MiB with a surrogate pair across the slice boundary intact', () => {
    const dir = tempDir();
    // "😀" is two UTF-16 units; placed so that its first unit is the last of the first slice.
    const text = `${'a'.repeat((1 << 18) - 1)}😀 and ünïcode ${'b'.repeat(3 << 20)}\n`;
    const path = writeUnique(dir, 'big', 'txt', text);
    assert.equal(readFileSync(path, 'utf8'), text);
  });

  it('leaves no file when the content fails part-way through', () => {
    const dir = tempDir();
    function* failing() {
      yield 'x'.repeat(1 << 20);
      throw new Error('renderer broke');
    }
    assert.throws(() => writeUnique(dir, 'half', 'json', failing()), /renderer broke/);
    assert.deepEqual(readdirSync(dir), []);
  });

  it('writes an iterable of chunks in order, and bytes as given', () => {
    const dir = tempDir();
    const chunks = ['one,', 'two,', 'three\n'];
    assert.equal(readFileSync(writeUnique(dir, 'c', 'csv', chunks), 'utf8'), 'one,two,three\n');
    const bytes = Uint8Array.from([0x89, 0x48, 0x44, 0x46, 0, 255]);
    assert.deepEqual([...readFileSync(writeUnique(dir, 'h', 'hdf5', bytes))], [...bytes]);
  });
});

describe('CSV in chunks', () => {
  it('yields bounded chunks whose concatenation is every row, header first', () => {
    const samples = 5000;
    const report = {
      runId: 'r1',
      host: 'h',
      series: [
        { id: 'CPU_ENERGY-package-0', group: 'cpu', kind: 'energy' },
        { id: 'CPU_UTILIZATION', group: 'cpu', kind: 'util' },
      ],
      rounds: [
        {
          id: 0,
          times: Array.from({ length: samples }, (_, k) => k / 100),
          values: [
            Array.from({ length: samples }, (_, k) => (k === 7 ? Number.NaN : k * 2)),
            Array.from({ length: samples }, () => 50),
          ],
        },
      ],
    } as unknown as Report;
    const chunks = [...csvChunks(report)];
    assert.ok(
      chunks.length >= (2 * samples) / CSV_ROWS_PER_CHUNK,
      `${chunks.length} chunks for ${2 * samples} rows`,
    );
    for (const c of chunks) assert.ok(c.endsWith('\n') && c.split('\n').length - 1 <= CSV_ROWS_PER_CHUNK);
    const lines = renderCsv(report).trimEnd().split('\n');
    assert.equal(lines.length, 1 + 2 * samples);
    assert.equal(lines[0], 'run_id,round,hostname,device_group,sensor,kind,unit,timestep,value');
    assert.equal(lines[1], 'r1,0,h,cpu,CPU_ENERGY-package-0,energy,J,0,0');
    assert.equal(lines[8], 'r1,0,h,cpu,CPU_ENERGY-package-0,energy,J,0.07,', 'a gap is an empty value');
    assert.equal(lines.at(-1), 'r1,0,h,cpu,CPU_UTILIZATION,util,%,49.99,50');
  });
});

describe('JSON in chunks', () => {
  it('is JSON.stringify(report) and a newline, with no chunk holding a long array whole', () => {
    const samples = 20_000;
    class Stamp {
      toJSON() {
        return 'stamp';
      }
    }
    const report = {
      kind: 'joulegate-report',
      note: 'quotes " \\ and ünïcode 😀, a lone \ud800 surrogate',
      left: undefined,
      fn: () => 1,
      gone: { toJSON: () => undefined },
      stamp: new Stamp(),
      map: new Map([[1, 2]]),
      keyed: { toJSON: (key: string) => `member ${key}` },
      keyedInArray: [{ toJSON: (key: string) => `element ${key}` }, 1],
      arrayWithToJson: Object.assign([1, 2], { toJSON: () => 'whole' }),
      nested: { deeper: [{ a: 1, b: undefined }, null, undefined, [], {}, [1, [2, [3]]]] },
      // biome-ignore lint/suspicious/noSparseArray: a hole is written as null, as JSON.stringify does
      sparse: [1, , 3],
      rounds: [
        {
          times: Array.from({ length: samples }, (_, k) => k / 100),
          values: [Array.from({ length: samples }, (_, k) => (k % 9 === 0 ? Number.NaN : k * 1.5e-7))],
        },
      ],
      [Symbol('hidden')]: 1,
      7: 'an integer key, which comes first',
    } as unknown as Report;
    const chunks = [...jsonChunks(report)];
    assert.equal(chunks.join(''), `${JSON.stringify(report)}\n`);
    const longest = Math.max(...chunks.map((c) => c.length));
    assert.ok(longest < 10_000, `the longest chunk has ${longest} characters`);
    const written = readFileSync(writeUnique(tempDir(), 'r', 'json', jsonChunks(report)), 'utf8');
    assert.equal(written, `${JSON.stringify(report)}\n`);
  });
});
