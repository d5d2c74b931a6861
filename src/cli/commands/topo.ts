import type { Command } from 'commander';
import { openPlatform } from '../../backends/open-platform.js';
import { DOMAIN_COUNT, DomainType, domainName, isNestedDomain } from '../../platform/domains.js';
import { errorMessage } from '../../platform/errors.js';
import { formatCpuList } from '../../platform/sysroot.js';
import type { Topology } from '../../platform/topology.js';
import { exitStatusOf } from '../parse.js';

/** Domains a CPU line names as its containers, when the node has them. */
const CPU_PARENTS = [
  DomainType.Core,
  DomainType.Package,
  DomainType.Memory,
  DomainType.Gpu,
  DomainType.GpuChip,
];

function memberText(topo: Topology, domain: DomainType, idx: number): string {
  if (domain === DomainType.Cpu) {
    return CPU_PARENTS.filter((p) => topo.numDomain(p) > 0)
      .map((p) => `${domainName(p)} ${topo.parentIndex(DomainType.Cpu, idx, p)}`)
      .filter((text) => !text.endsWith(' -1'))
      .join(', ');
  }
  const cpus = topo.cpusOf(domain, idx);
  if (cpus.length > 0) return `cpus ${formatCpuList(cpus)}`;
  if (isNestedDomain(domain, DomainType.Package)) {
    return `in package ${topo.parentIndex(domain, idx, DomainType.Package)}`;
  }
  return 'no cpus';
}

/** Text listing: each domain with its count, then one line per index with its members. */
export function formatTopology(topo: Topology): string {
  let out = '';
  for (let d = 0; d < DOMAIN_COUNT; d++) {
    const domain = d as DomainType;
    const count = topo.numDomain(domain);
    out += `${domainName(domain)}: ${count}\n`;
    for (let i = 0; i < count; i++) out += `  ${domainName(domain)} ${i}: ${memberText(topo, domain, i)}\n`;
  }
  return out;
}

/** `joulegate topo`: the node's domains as joulegate sees them (sysfs under JOULEGATE_SYSROOT). */
export function register(program: Command): void {
  program
    .command('topo')
    .summary('Show the topology: each domain, its count and its members')
    .option('--json', 'print JSON: {domains: {NAME: {count, cpus: [[cpu, ...] per index]}}}')
    .action(async (opts: { json?: boolean }) => {
      try {
        const pio = await openPlatform();
        try {
          const topo = pio.topology;
          process.stdout.write(
            opts.json ? `${JSON.stringify(topo.toJSON(), null, 2)}\n` : formatTopology(topo),
          );
        } finally {
          await pio.close();
        }
      } catch (err) {
        process.stderr.write(`Error: ${errorMessage(err)}\n`);
        process.exitCode = exitStatusOf(err);
      }
    });
}
