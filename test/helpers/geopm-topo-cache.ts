import assert from 'node:assert/strict';
import type { SysfsShape } from './sysfs-topology.js';

/*
 * GEOPM's topology cache read the way GEOPM's PlatformTopo reads it
 * (docs/reference/geopm-service.md#topology-cache), written for the tests from those rules alone, not from joulegate's writer:
 * `LC_ALL=C lscpu -x` style `Key: value` lines, NUMA nodes as hex CPU masks, and GEOPM's own
 * `GPU node<N> CPU(s):` / `GPU chip<N> CPU(s):` lines with comma-separated CPU lists.
 */

export interface TopoCacheCounts {
  board: number;
  package: number;
  core: number;
  cpu: number;
  memory: number;
  package_integrated_memory: number;
  nic: number;
  package_integrated_nic: number;
  gpu: number;
  package_integrated_gpu: number;
  gpu_chip: number;
}

export interface ParsedTopoCache {
  /** Every `Key: value` line, in file order. */
  fields: Map<string, string>;
  counts: TopoCacheCounts;
  onlineCpus: number[];
  /** CPUs of each NUMA node, by node number. */
  numa: Map<number, number[]>;
  gpus: number[][];
  gpuChips: number[][];
}

const LINE = /^([^:]+):( +)(\S.*)$/;
const HEX_MASK = /^0x[0-9a-f]+$/;
const CPU_LIST = /^(\d+(,\d+)*)?$/;

/** CPUs whose bits are set in a `0x…` mask (lowest CPU = lowest bit). */
function maskCpus(mask: string, what: string): number[] {
  assert.match(mask, HEX_MASK, `${what}: not a hex CPU mask`);
  const bits = BigInt(mask);
  const cpus: number[] = [];
  for (let cpu = 0; bits >> BigInt(cpu) !== 0n; cpu++) if ((bits >> BigInt(cpu)) & 1n) cpus.push(cpu);
  return cpus;
}

function listCpus(list: string, what: string): number[] {
  assert.match(list, CPU_LIST, `${what}: not a comma-separated CPU list`);
  return list === '' ? [] : list.split(',').map(Number);
}

function count(fields: Map<string, string>, key: string): number {
  const value = fields.get(key);
  assert.ok(value !== undefined, `no '${key}' line`);
  assert.match(value, /^[1-9]\d*$/, `${key}: not a positive count`);
  return Number(value);
}

/** Parses the cache text, asserting every line has the lscpu layout GEOPM's parser expects. */
export function parseGeopmTopoCache(text: string): ParsedTopoCache {
  assert.ok(text.endsWith('\n'), 'the cache ends with a newline');
  const fields = new Map<string, string>();
  for (const line of text.slice(0, -1).split('\n')) {
    const m = LINE.exec(line);
    assert.ok(m, `not a 'Key: value' line: ${JSON.stringify(line)}`);
    assert.ok(!fields.has(m[1]!), `'${m[1]}' appears twice`);
    fields.set(m[1]!, m[3]!);
  }
  const sockets = count(fields, 'Socket(s)');
  const cores = sockets * count(fields, 'Core(s) per socket');
  const cpus = cores * count(fields, 'Thread(s) per core');
  const numa = new Map<number, number[]>();
  const gpus: number[][] = [];
  const gpuChips: number[][] = [];
  for (const [key, value] of fields) {
    let m = /^NUMA node(\d+) CPU\(s\)$/.exec(key);
    if (m) numa.set(Number(m[1]), maskCpus(value, key));
    m = /^GPU node(\d+) CPU\(s\)$/.exec(key);
    if (m) gpus[Number(m[1])] = listCpus(value, key);
    m = /^GPU chip(\d+) CPU\(s\)$/.exec(key);
    if (m) gpuChips[Number(m[1])] = listCpus(value, key);
  }
  for (const [what, list] of [
    ['GPU node', gpus],
    ['GPU chip', gpuChips],
  ] as const)
    assert.ok([...list].every(Boolean), `${what} lines are numbered from 0 without gaps`);
  if (numa.size > 0)
    assert.equal(count(fields, 'NUMA node(s)'), numa.size, 'NUMA node(s) counts the node lines');
  const withCpus = [...numa.values()].filter((c) => c.length > 0).length;
  return {
    fields,
    counts: {
      board: 1,
      package: sockets,
      core: cores,
      cpu: cpus,
      // NUMA nodes with CPUs are memory domains; those without (HBM, CXL) package-integrated.
      memory: numa.size === 0 ? 1 : withCpus,
      package_integrated_memory: numa.size - withCpus,
      nic: 0,
      package_integrated_nic: 0,
      gpu: gpus.length,
      package_integrated_gpu: 0,
      gpu_chip: gpuChips.length,
    },
    onlineCpus: maskCpus(fields.get('On-line CPU(s) mask') ?? '', 'On-line CPU(s) mask'),
    numa,
    gpus,
    gpuChips,
  };
}

/**
 * Asserts that a cache describes a GPU-less machine of this shape: GEOPM's derived domain
 * counts, the lscpu count and online mask, and every NUMA node's CPUs.
 */
export function assertTopoCacheDescribes(text: string, shape: SysfsShape): ParsedTopoCache {
  const cache = parseGeopmTopoCache(text);
  const withCpus = [...shape.numa.values()].filter((c) => c.length > 0).length;
  assert.deepEqual(cache.counts, {
    board: 1,
    package: shape.packages,
    core: shape.cores,
    cpu: shape.cpus.length,
    memory: withCpus,
    package_integrated_memory: shape.numa.size - withCpus,
    nic: 0,
    package_integrated_nic: 0,
    gpu: 0,
    package_integrated_gpu: 0,
    gpu_chip: 0,
  });
  assert.equal(cache.fields.get('CPU(s)'), String(shape.cpus.length));
  assert.equal(cache.fields.get('Thread(s) per core'), String(shape.threadsPerCore));
  assert.deepEqual(cache.onlineCpus, shape.cpus);
  assert.deepEqual(cache.numa, shape.numa);
  return cache;
}
