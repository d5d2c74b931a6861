import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Topology } from '../../src/platform/topology.js';
import { cpuMask, formatTopoCache } from '../../src/service/topo-cache.js';
import { assertTopoCacheDescribes, parseGeopmTopoCache } from '../helpers/geopm-topo-cache.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { sysfsShape } from '../helpers/sysfs-topology.js';
import { FIXTURES } from '../helpers/tmp.js';
import { ensureUser } from '../helpers/users.js';
import { ServiceHarness } from './harness.js';

const daemon = needsDaemon();

/*
 * The daemon on the server-2s4c2t fixture (2 sockets × 4 cores × 2 threads, one NUMA node per
 * socket, CPUs interleaved across sockets) hands GEOPM a topology cache of that machine.
 */

const FIXTURE = join(FIXTURES, 'server-2s4c2t');
const h = new ServiceHarness();
const reader = whenMet(daemon, () => ensureUser('jgsvc_reader'));

// Top level, not in before(): the helpers' after() hooks must attach to the file, not a hook.
await whenMet(daemon, () => h.setup());
// The harness builds its own small node; this daemon sees the fixture machine instead.
for (const entry of readdirSync(h.sysroot)) rmSync(join(h.sysroot, entry), { recursive: true });
cpSync(FIXTURE, h.sysroot, { recursive: true });
await whenMet(daemon, () => h.startDaemon());

test('TopoGetCache and geopm-topo-cache describe the 2-socket, 4-core, 2-thread fixture', {
  skip: daemon,
}, async () => {
  const shape = sysfsShape(FIXTURE);
  // The fixture's own files, read directly: what the cache must say.
  assert.deepEqual(
    { packages: shape.packages, cores: shape.cores, threads: shape.threadsPerCore, cpus: shape.cpus.length },
    { packages: 2, cores: 8, threads: 2, cpus: 16 },
  );
  const [r] = await h.client([{ call: 'topoGetCache' }], { user: reader });
  assert.equal(r!.ok, true);
  const text = r!.value as string;
  const cache = assertTopoCacheDescribes(text, shape);
  assert.equal(cache.fields.get('Socket(s)'), '2');
  assert.equal(cache.fields.get('Core(s) per socket'), '4');
  assert.equal(cache.fields.get('On-line CPU(s) mask'), '0xffff');
  // Even CPUs on socket 0's node, odd ones on socket 1's.
  assert.equal(cache.fields.get('NUMA node0 CPU(s)'), '0x5555');
  assert.equal(cache.fields.get('NUMA node1 CPU(s)'), '0xaaaa');
  assert.equal(readFileSync(join(h.runDir, 'geopm-topo-cache'), 'utf8'), text);
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
