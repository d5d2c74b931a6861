/** Topology domain types with GEOPM's integer values (geopm_topo.h). */
export enum DomainType {
  Invalid = -1,
  Board = 0,
  Package = 1,
  Core = 2,
  Cpu = 3,
  Memory = 4,
  PackageIntegratedMemory = 5,
  Nic = 6,
  PackageIntegratedNic = 7,
  Gpu = 8,
  PackageIntegratedGpu = 9,
  GpuChip = 10,
}

export const DOMAIN_COUNT = 11;

export const DOMAIN_NAMES: readonly string[] = [
  'board',
  'package',
  'core',
  'cpu',
  'memory',
  'package_integrated_memory',
  'nic',
  'package_integrated_nic',
  'gpu',
  'package_integrated_gpu',
  'gpu_chip',
];

export const ALL_DOMAINS: readonly DomainType[] = DOMAIN_NAMES.map((_, i) => i as DomainType);

export function domainName(domain: DomainType): string {
  const name = DOMAIN_NAMES[domain];
  if (name === undefined) throw new RangeError(`invalid domain type: ${domain}`);
  return name;
}

/** Parse a domain name; returns DomainType.Invalid for an unknown name. */
export function parseDomain(name: string): DomainType {
  const idx = DOMAIN_NAMES.indexOf(name);
  return idx < 0 ? DomainType.Invalid : (idx as DomainType);
}

export function isValidDomain(domain: number): domain is DomainType {
  return Number.isInteger(domain) && domain >= 0 && domain < DOMAIN_COUNT;
}

// Direct containment facts; `isNestedDomain` closes them transitively.
const PARENTS: Record<DomainType, DomainType[]> = {
  [DomainType.Invalid]: [],
  [DomainType.Board]: [],
  [DomainType.Package]: [DomainType.Board],
  [DomainType.Core]: [DomainType.Package],
  [DomainType.Cpu]: [DomainType.Core, DomainType.Memory, DomainType.Gpu, DomainType.GpuChip],
  [DomainType.Memory]: [DomainType.Board],
  [DomainType.PackageIntegratedMemory]: [DomainType.Package],
  [DomainType.Nic]: [DomainType.Board],
  [DomainType.PackageIntegratedNic]: [DomainType.Package],
  [DomainType.Gpu]: [DomainType.Board],
  [DomainType.PackageIntegratedGpu]: [DomainType.Package],
  [DomainType.GpuChip]: [DomainType.Gpu],
};

/**
 * True when every `inner` domain is contained in exactly one `outer` domain (GEOPM's
 * is_nested_domain). A domain is nested in itself; everything is nested in board.
 */
export function isNestedDomain(inner: DomainType, outer: DomainType): boolean {
  if (!isValidDomain(inner) || !isValidDomain(outer)) return false;
  if (inner === outer || outer === DomainType.Board) return true;
  return PARENTS[inner].some((p) => isNestedDomain(p, outer));
}
