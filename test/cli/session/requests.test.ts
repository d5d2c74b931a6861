import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkRequestIndices,
  parseRequests,
  type RequestContext,
  requestLinesOf,
} from '../../../src/cli/session/requests.js';
import { formatRow, headerRow, metricName } from '../../../src/cli/session/trace.js';
import { DomainType } from '../../../src/platform/domains.js';
import { FormatType } from '../../../src/platform/format.js';

const counts: Partial<Record<DomainType, number>> = {
  [DomainType.Board]: 1,
  [DomainType.Package]: 2,
  [DomainType.Cpu]: 4,
};
const ctx: RequestContext = {
  numDomain: (d) => counts[d] ?? 0,
  nativeDomain: (name) => {
    if (name === 'CPU_ENERGY') return DomainType.Package;
    throw new Error(`no support for signal ${name}`);
  },
};

test('request lines are stripped and end at the first empty line', () => {
  assert.deepEqual(requestLinesOf('  TIME board 0 \n# note\nA cpu 1\n\nB cpu 2\n'), [
    'TIME board 0',
    '# note',
    'A cpu 1',
  ]);
  assert.deepEqual(requestLinesOf('   \nTIME board 0'), []);
});

test('requests: comments skipped, "*" index expands to every index, "*" domain is native', () => {
  const reqs = parseRequests(
    ['TIME board 0', '# comment', 'U cpu *', 'CPU_ENERGY * 1', 'X\tpackage   1'],
    ctx,
  );
  assert.deepEqual(reqs, [
    { name: 'TIME', domain: DomainType.Board, idx: 0 },
    { name: 'U', domain: DomainType.Cpu, idx: 0 },
    { name: 'U', domain: DomainType.Cpu, idx: 1 },
    { name: 'U', domain: DomainType.Cpu, idx: 2 },
    { name: 'U', domain: DomainType.Cpu, idx: 3 },
    { name: 'CPU_ENERGY', domain: DomainType.Package, idx: 1 },
    { name: 'X', domain: DomainType.Package, idx: 1 },
  ]);
});

test('requests: geopmsession error texts', () => {
  const err = (lines: string[]) => {
    try {
      parseRequests(lines, ctx);
    } catch (e) {
      return (e as Error).message;
    }
    return 'no error';
  };
  assert.equal(err(['TIME board']), 'Read request must be three words: "TIME board"');
  assert.equal(err(['TIME board 0 1']), 'Read request must be three words: "TIME board 0 1"');
  assert.equal(err(['TIME socket 0']), 'Unable to convert values into a read request: "TIME socket 0"');
  assert.equal(err(['TIME board x']), 'Unable to convert values into a read request: "TIME board x"');
  assert.equal(err(['NOPE * 0']), 'Unable to convert values into a read request: "NOPE * 0"');
  assert.equal(err([]), 'Empty request stream.');
  assert.equal(err(['# only a comment']), 'Empty request stream.');
  // A domain this node has none of gives no columns: still an empty stream.
  assert.equal(err(['G gpu *']), 'Empty request stream.');
});

test('out-of-range indices are rejected with the acceptable range', () => {
  const reqs = parseRequests(['A package 2'], ctx);
  assert.throws(
    () => checkRequestIndices(reqs, ctx),
    /: Request index in "A package 2" is out of range\. Acceptable package indices are non-negative integers up to and including 1$/,
  );
  assert.throws(() => checkRequestIndices(parseRequests(['A cpu -1'], ctx), ctx), /out of range/);
  checkRequestIndices(parseRequests(['A package 1'], ctx), ctx);
});

test('trace header quotes NAME-domain-idx, NAME alone at board; rows use each format', () => {
  const reqs = [
    { name: 'TIME', domain: DomainType.Board, idx: 0 },
    { name: 'CPU_ENERGY', domain: DomainType.Package, idx: 1 },
  ];
  assert.equal(metricName(reqs[1]!), 'CPU_ENERGY-package-1');
  assert.equal(headerRow(reqs, ','), '"TIME","CPU_ENERGY-package-1"\n');
  assert.equal(headerRow(reqs, ';'), '"TIME";"CPU_ENERGY-package-1"\n');
  assert.equal(
    formatRow(
      [0.5, 2e9, 255, Number.NaN],
      [FormatType.Double, FormatType.Integer, FormatType.Hex, FormatType.Double],
      ',',
    ),
    '0.5,2000000000,0x000000ff,nan\n',
  );
  assert.throws(() => formatRow([1], [], ','), RangeError);
});

test('a "*" request leaves out the indices a source lacks, naming each with the reason', () => {
  const notes: string[] = [];
  const reqs = parseRequests(['U cpu *', 'CPU_ENERGY package 1'], {
    ...ctx,
    whyUnavailable: (name, domain, idx) =>
      name === 'U' && domain === DomainType.Cpu && idx % 2 === 1 ? `no file for cpu ${idx}` : undefined,
    leftOut: (note) => notes.push(note),
  });
  assert.deepEqual(
    reqs.map((r) => `${r.name} ${r.idx}`),
    ['U 0', 'U 2', 'CPU_ENERGY 1'],
  );
  assert.deepEqual(notes, ['U cpu 1: no file for cpu 1', 'U cpu 3: no file for cpu 3']);
});
