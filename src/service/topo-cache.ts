import { DomainType } from '../platform/domains.js';
import type { Topology } from '../platform/topology.js';

/** Hex CPU mask as `lscpu -x` prints it (lowest CPU = lowest bit). */
export function cpuMask(cpus: readonly number[]): string {
  let mask = 0n;
  for (const c of cpus) mask |= 1n << BigInt(c);
  return `0x${mask.toString(16)}`;
}

/**
 * The topology in GEOPM's cache format (`/run/geopm/geopm-topo-cache`): `LC_ALL=C lscpu -x`
 * style `key: value` lines followed by GEOPM's `GPU node<N> CPU(s):` / `GPU chip<N> CPU(s):`
 * lines. GEOPM's parser derives cores = sockets × cores per socket and cpus = cores × threads
 * per core, so those three lines are computed to give back this topology's counts.
 */
export function formatTopoCache(topo: Topology): string {
  const cpus = topo.numDomain(DomainType.Cpu);
  const cores = topo.numDomain(DomainType.Core);
  const sockets = topo.numDomain(DomainType.Package);
  const online = topo.placements.map((p) => p.cpu);
  const lines: [string, string][] = [
    ['Architecture', process.arch === 'x64' ? 'x86_64' : process.arch],
    ['CPU op-mode(s)', '32-bit, 64-bit'],
    ['Byte Order', 'Little Endian'],
    ['CPU(s)', String(cpus)],
    ['On-line CPU(s) mask', cpuMask(online)],
    ['Thread(s) per core', String(Math.max(1, Math.round(cpus / cores)))],
    ['Core(s) per socket', String(Math.max(1, Math.round(cores / sockets)))],
    ['Socket(s)', String(sockets)],
  ];
  const numa = topo.numa.length > 0 ? [...topo.numa].sort((a, b) => a.node - b.node) : [];
  if (numa.length > 0) {
    lines.push(['NUMA node(s)', String(numa.length)]);
    for (const n of numa)
      lines.push([`NUMA node${n.node} CPU(s)`, n.cpus.length > 0 ? cpuMask(n.cpus) : '0x0']);
  } else {
    const memories = topo.numDomain(DomainType.Memory);
    lines.push(['NUMA node(s)', String(memories)]);
    for (let i = 0; i < memories; i++)
      lines.push([`NUMA node${i} CPU(s)`, cpuMask(topo.cpusOf(DomainType.Memory, i))]);
  }
  for (let i = 0; i < topo.numDomain(DomainType.Gpu); i++) {
    lines.push([`GPU node${i} CPU(s)`, topo.cpusOf(DomainType.Gpu, i).join(',')]);
  }
  for (let i = 0; i < topo.numDomain(DomainType.GpuChip); i++) {
    lines.push([`GPU chip${i} CPU(s)`, topo.cpusOf(DomainType.GpuChip, i).join(',')]);
  }
  return `${lines.map(([k, v]) => `${k}:${' '.repeat(Math.max(1, 33 - k.length))}${v}`).join('\n')}\n`;
}
