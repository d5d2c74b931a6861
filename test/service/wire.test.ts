import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeMessage, encodeBody, encodeMessage, frameSize, MessageType } from '../../src/ipc/dbus/wire.js';
import { parseStartTicks, parseStatus } from '../../src/platform/process.js';
import { Topology } from '../../src/platform/topology.js';
import { SessionSchema } from '../../src/service/sessions.js';
import { shown } from '../../src/service/text.js';
import { cpuMask, formatTopoCache } from '../../src/service/topo-cache.js';
import { parseGeopmTopoCache } from '../helpers/geopm-topo-cache.js';

test('messages round-trip, including NaN and ±Inf doubles and nested structs', () => {
  const body = ['name', -7, Number.NaN, Number.POSITIVE_INFINITY, [[1, 2, 'x']], [['a', 'b'], []]];
  const buf = encodeMessage({
    type: MessageType.MethodCall,
    flags: 0,
    serial: 9,
    path: '/io/github/geopm',
    member: 'M',
    signature: 'sidda(iis)(asas)',
    body,
  });
  assert.equal(frameSize(buf), buf.length);
  const msg = decodeMessage(buf);
  assert.equal(msg.member, 'M');
  assert.equal(msg.serial, 9);
  assert.deepEqual(msg.body, body);
  assert.equal(msg.bodyError, undefined);
});

test('a body that does not fit its signature is reported, not thrown', () => {
  const buf = encodeMessage({
    type: MessageType.MethodCall,
    flags: 0,
    serial: 1,
    path: '/',
    member: 'M',
    signature: 's',
    body: ['abc'],
  });
  // Same header layout, but the signature now claims a variant: the string's bytes are garbage as one.
  const broken = Buffer.from(buf);
  const at = broken.lastIndexOf(Buffer.from([1, 0x73, 0])); // signature field value: len 1, "s", NUL
  broken[at + 1] = 'v'.charCodeAt(0);
  const msg = decodeMessage(broken);
  assert.equal(msg.signature, 'v');
  assert.match(msg.bodyError ?? '', /./);
});

test('encoding refuses values that do not fit the signature', () => {
  assert.throws(() => encodeBody('i', [2 ** 31]), /does not fit D-Bus type 'i'/);
  assert.throws(() => encodeBody('s', [3]), /does not fit/);
  assert.throws(() => encodeBody('s', ['a\0b']), /NUL/);
  assert.throws(() => encodeBody('ss', ['a']), /has 2 values/);
});

test('start time is field 22 even when the command name has spaces and parentheses', () => {
  const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
  fields[19] = '123456'; // field 22
  assert.equal(parseStartTicks(`4242 (a) b (c)) ${fields.join(' ')}`), 123456);
});

test('status parsing takes effective uid/gid and CapEff', () => {
  const s = parseStatus('Name:\tx\nUid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nCapEff:\t0000000000200000\n');
  assert.deepEqual(s, { uid: 2, gid: 6, capEff: 0x200000n });
});

test('session records are validated strictly', () => {
  const ok = {
    client_pid: 5,
    client_uid: 0,
    client_gid: 0,
    create_time: 1,
    start_ticks: 2,
    signals: [],
    controls: [],
  };
  assert.ok(SessionSchema.safeParse(ok).success);
  assert.ok(!SessionSchema.safeParse({ ...ok, extra: 1 }).success);
  assert.ok(!SessionSchema.safeParse({ ...ok, client_pid: -1 }).success);
  assert.ok(!SessionSchema.safeParse({ ...ok, start_ticks: undefined }).success);
});

test('topology cache gives GEOPM the counts of the node, with HBM nodes and GPUs', () => {
  // 2 packages × 4 cores × 2 threads: CPU n and n + 8 share a core, as Linux numbers them.
  const cpus = Array.from({ length: 16 }, (_, cpu) => ({
    cpu,
    packageId: cpu % 8 < 4 ? 0 : 1,
    coreId: cpu % 4,
  }));
  const topo = new Topology({
    cpus,
    numa: [
      { node: 0, cpus: [0, 1, 2, 3, 8, 9, 10, 11] },
      { node: 1, cpus: [4, 5, 6, 7, 12, 13, 14, 15] },
      { node: 2, cpus: [], distance: [13, 20, 10, 20] },
      { node: 3, cpus: [], distance: [20, 13, 20, 10] },
    ],
    gpus: [
      {
        cpus: [0, 1, 2, 3],
        chips: [
          [0, 1],
          [2, 3],
        ],
      },
      { cpus: [4, 5, 6, 7] },
    ],
  });
  const cache = parseGeopmTopoCache(formatTopoCache(topo));
  assert.deepEqual(cache.counts, {
    board: 1,
    package: 2,
    core: 8,
    cpu: 16,
    memory: 2,
    package_integrated_memory: 2,
    nic: 0,
    package_integrated_nic: 0,
    gpu: 2,
    package_integrated_gpu: 0,
    gpu_chip: 2,
  });
  assert.equal(cache.fields.get('CPU(s)'), '16');
  assert.deepEqual(
    cache.onlineCpus,
    Array.from({ length: 16 }, (_, i) => i),
  );
  assert.deepEqual(cache.numa.get(1), [4, 5, 6, 7, 12, 13, 14, 15]);
  assert.deepEqual(cache.numa.get(2), []);
  assert.deepEqual(cache.gpus, [
    [0, 1, 2, 3],
    [4, 5, 6, 7],
  ]);
  assert.deepEqual(cache.gpuChips, [
    [0, 1],
    [2, 3],
  ]);
  assert.equal(cpuMask([0, 64]), '0x10000000000000001');
});

test('names echoed in errors are bounded and printable', () => {
  assert.equal(shown('a\nb'), 'a?b');
  assert.equal(shown('x'.repeat(1000)).length, 81);
});
