import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertTopoCacheDescribes } from '../helpers/geopm-topo-cache.js';
import { sysfsShape } from '../helpers/sysfs-topology.js';
import { FIXTURES } from '../helpers/tmp.js';
import { ensureUser } from '../helpers/users.js';
import { ServiceHarness } from './harness.js';

/*
 * The daemon on the server-2s4c2t fixture (2 sockets × 4 cores × 2 threads, one NUMA node per
 * socket, CPUs interleaved across sockets) hands GEOPM a topology cache of that machine.
 */

const FIXTURE = join(FIXTURES, 'server-2s4c2t');
const h = new ServiceHarness();
const reader = ensureUser('jgsvc_reader');

// Top level, not in before(): the helpers' after() hooks must attach to the file, not a hook.
await h.setup();
// The harness builds its own small node; this daemon sees the fixture machine instead.
for (const entry of readdirSync(h.sysroot)) rmSync(join(h.sysroot, entry), { recursive: true });
cpSync(FIXTURE, h.sysroot, { recursive: true });
await h.startDaemon();

test('TopoGetCache and geopm-topo-cache describe the 2-socket, 4-core, 2-thread fixture', async () => {
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
