import { DOMAIN_COUNT, DomainType, domainName, isNestedDomain } from './domains.js';
import { InvalidArgumentError, ParseError } from './errors.js';
import { parseCpuList, Sysroot } from './sysroot.js';

/** Where one logical CPU sits, by Linux's own ids. */
export interface CpuPlacement {
  cpu: number;
  packageId: number;
  coreId: number;
}

/** A NUMA node as sysfs describes it. */
export interface NumaNode {
  node: number;
  cpus: number[];
  /** Distances to every node, indexed by node id order as in the `distance` file. */
  distance?: number[];
}

/** What a GPU backend knows about one GPU: the CPUs it is affine to, and its chips' affinity. */
export interface GpuPlacement {
  cpus: number[];
  chips?: number[][];
}

export interface TopologyInput {
  cpus: CpuPlacement[];
  numa: NumaNode[];
  gpus?: GpuPlacement[];
}

/**
 * The node's domains. CPU indices are Linux CPU numbers; package and core indices are dense,
 * ordered by (physical_package_id, core_id) — no enumeration order is assumed.
 */
export class Topology {
  private readonly counts = new Array<number>(DOMAIN_COUNT).fill(0);
  /** cpu → index of the containing domain, per domain type (-1 = none). */
  private readonly cpuParent = new Map<DomainType, Int32Array>();
  /** non-cpu domain → package (for core, package_integrated_*). */
  private readonly packageOf = new Map<DomainType, number[]>();
  private readonly gpuCpus: number[][] = [];
  private readonly gpuChipCpus: number[][] = [];
  private readonly gpuOfChip: number[] = [];
  readonly placements: readonly CpuPlacement[];
  readonly numa: readonly NumaNode[];

  constructor(input: TopologyInput) {
    if (input.cpus.length === 0) throw new ParseError('topology: no online CPUs found');
    this.placements = [...input.cpus].sort((a, b) => a.cpu - b.cpu);
    this.numa = input.numa;
    const numCpu = this.placements[this.placements.length - 1]!.cpu + 1;
    const fresh = () => new Int32Array(numCpu).fill(-1);

    const packageIds = [...new Set(this.placements.map((p) => p.packageId))].sort((a, b) => a - b);
    const coreKeys = [...new Set(this.placements.map((p) => `${p.packageId}:${p.coreId}`))]
      .map((k) => k.split(':').map(Number) as [number, number])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const coreIndex = new Map(coreKeys.map(([pkg, core], i) => [`${pkg}:${core}`, i]));
    const pkgCol = fresh();
    const coreCol = fresh();
    for (const p of this.placements) {
      pkgCol[p.cpu] = packageIds.indexOf(p.packageId);
      coreCol[p.cpu] = coreIndex.get(`${p.packageId}:${p.coreId}`)!;
    }
    this.cpuParent.set(DomainType.Package, pkgCol);
    this.cpuParent.set(DomainType.Core, coreCol);
    this.packageOf.set(
      DomainType.Core,
      coreKeys.map(([pkg]) => packageIds.indexOf(pkg)),
    );
    this.counts[DomainType.Board] = 1;
    this.counts[DomainType.Package] = packageIds.length;
    this.counts[DomainType.Core] = coreKeys.length;
    this.counts[DomainType.Cpu] = numCpu;

    // Memory: NUMA nodes with CPUs; CPU-less nodes are package-integrated memory (HBM, CXL).
    const memCol = fresh();
    const withCpus = input.numa.filter((n) => n.cpus.length > 0).sort((a, b) => a.node - b.node);
    const cpuless = input.numa.filter((n) => n.cpus.length === 0).sort((a, b) => a.node - b.node);
    if (withCpus.length === 0) {
      for (const p of this.placements) memCol[p.cpu] = 0;
      this.counts[DomainType.Memory] = 1;
    } else {
      withCpus.forEach((n, i) => {
        for (const c of n.cpus) if (c < numCpu) memCol[c] = i;
      });
      this.counts[DomainType.Memory] = withCpus.length;
    }
    this.cpuParent.set(DomainType.Memory, memCol);
    this.counts[DomainType.PackageIntegratedMemory] = cpuless.length;
    this.packageOf.set(
      DomainType.PackageIntegratedMemory,
      cpuless.map((n) => this.nearestPackage(n, withCpus, pkgCol)),
    );
    for (const gpu of input.gpus ?? []) this.addGpu(gpu);
  }

  /** A CPU-less node belongs to the package of the closest node that has CPUs. */
  private nearestPackage(node: NumaNode, withCpus: NumaNode[], pkgCol: Int32Array): number {
    let best: NumaNode | undefined;
    let bestDist = Number.POSITIVE_INFINITY;
    for (const other of withCpus) {
      const d = node.distance?.[other.node] ?? Number.POSITIVE_INFINITY;
      if (d < bestDist) {
        bestDist = d;
        best = other;
      }
    }
    const cpu = (best ?? withCpus[0])?.cpus[0];
    return cpu === undefined ? 0 : Math.max(0, pkgCol[cpu] ?? 0);
  }

  /** Hook for GPU backends: adds one gpu domain (and its chips) with its CPU affinity. */
  addGpu(gpu: GpuPlacement): number {
    const idx = this.gpuCpus.length;
    this.gpuCpus.push([...gpu.cpus]);
    for (const chip of gpu.chips ?? []) {
      this.gpuChipCpus.push([...chip]);
      this.gpuOfChip.push(idx);
    }
    this.counts[DomainType.Gpu] = this.gpuCpus.length;
    this.counts[DomainType.GpuChip] = this.gpuChipCpus.length;
    return idx;
  }

  numDomain(domain: DomainType): number {
    if (domain < 0 || domain >= DOMAIN_COUNT)
      throw new InvalidArgumentError(`invalid domain type: ${domain}`);
    return this.counts[domain]!;
  }

  checkIndex(domain: DomainType, idx: number): void {
    const n = this.numDomain(domain);
    if (!Number.isInteger(idx) || idx < 0 || idx >= n) {
      throw new InvalidArgumentError(
        `domain index ${idx} out of range for ${domainName(domain)} (${n} ${n === 1 ? 'index' : 'indices'})`,
      );
    }
  }

  /** Logical CPUs inside one domain index. */
  cpusOf(domain: DomainType, idx: number): number[] {
    this.checkIndex(domain, idx);
    switch (domain) {
      case DomainType.Board:
        return this.placements.map((p) => p.cpu);
      case DomainType.Cpu:
        return this.placements.some((p) => p.cpu === idx) ? [idx] : [];
      case DomainType.Gpu:
        return [...this.gpuCpus[idx]!];
      case DomainType.GpuChip:
        return [...this.gpuChipCpus[idx]!];
      case DomainType.PackageIntegratedMemory:
      case DomainType.PackageIntegratedNic:
      case DomainType.PackageIntegratedGpu:
      case DomainType.Nic:
        return [];
      default: {
        const col = this.cpuParent.get(domain)!;
        const out: number[] = [];
        for (let c = 0; c < col.length; c++) if (col[c] === idx) out.push(c);
        return out;
      }
    }
  }

  /** Index of the `outer` domain that contains `inner` index `idx` (GEOPM's domain_idx). */
  parentIndex(inner: DomainType, idx: number, outer: DomainType): number {
    this.checkIndex(inner, idx);
    if (!isNestedDomain(inner, outer)) {
      throw new InvalidArgumentError(`${domainName(inner)} is not nested in ${domainName(outer)}`);
    }
    if (inner === outer) return idx;
    if (outer === DomainType.Board) return 0;
    if (inner === DomainType.Cpu) {
      if (outer === DomainType.Gpu || outer === DomainType.GpuChip) {
        const lists = outer === DomainType.Gpu ? this.gpuCpus : this.gpuChipCpus;
        return lists.findIndex((l) => l.includes(idx));
      }
      return this.cpuParent.get(outer)![idx]!;
    }
    if (inner === DomainType.GpuChip) return this.gpuOfChip[idx]!;
    const pkgs = this.packageOf.get(inner);
    return pkgs?.[idx] ?? 0;
  }

  /** All `inner` indices inside `outer` index `outerIdx` (GEOPM's domain_nested). */
  nested(inner: DomainType, outer: DomainType, outerIdx: number): number[] {
    this.checkIndex(outer, outerIdx);
    if (!isNestedDomain(inner, outer)) {
      throw new InvalidArgumentError(`${domainName(inner)} is not nested in ${domainName(outer)}`);
    }
    if (inner === outer) return [outerIdx];
    if (inner === DomainType.Cpu) return this.cpusOf(outer, outerIdx);
    const out: number[] = [];
    const n = this.numDomain(inner);
    for (let i = 0; i < n; i++) if (this.parentIndex(inner, i, outer) === outerIdx) out.push(i);
    return out;
  }

  toJSON(): Record<string, unknown> {
    const domains: Record<string, unknown> = {};
    for (let d = 0; d < DOMAIN_COUNT; d++) {
      const n = this.counts[d]!;
      const members: number[][] = [];
      for (let i = 0; i < n; i++) members.push(this.cpusOf(d as DomainType, i));
      domains[domainName(d as DomainType)] = { count: n, cpus: members };
    }
    return { domains };
  }
}

/** Reads CPU placement and NUMA nodes from sysfs (under the sysroot). */
export function readTopologyInput(root: Sysroot = new Sysroot()): TopologyInput {
  const base = '/sys/devices/system/cpu';
  let online: number[];
  if (root.exists(`${base}/online`)) {
    online = parseCpuList(root.readText(`${base}/online`));
  } else {
    online = root
      .list(base)
      .filter((e) => /^cpu\d+$/.test(e))
      .map((e) => Number(e.slice(3)))
      .sort((a, b) => a - b);
  }
  const cpus: CpuPlacement[] = online.map((cpu) => {
    const dir = `${base}/cpu${cpu}/topology`;
    const packageId = root.exists(`${dir}/physical_package_id`)
      ? root.readNumber(`${dir}/physical_package_id`)
      : 0;
    const coreId = root.exists(`${dir}/core_id`) ? root.readNumber(`${dir}/core_id`) : cpu;
    // Some VMs report -1 for an unknown package; treat it as package 0.
    return { cpu, packageId: Math.max(0, packageId), coreId };
  });
  const nodeBase = '/sys/devices/system/node';
  const numa: NumaNode[] = root
    .list(nodeBase)
    .filter((e) => /^node\d+$/.test(e))
    .map((e) => {
      const node = Number(e.slice(4));
      const cpulist = root.exists(`${nodeBase}/${e}/cpulist`)
        ? root.readText(`${nodeBase}/${e}/cpulist`)
        : '';
      const onlineSet = new Set(online);
      const distText = root.exists(`${nodeBase}/${e}/distance`)
        ? root.readText(`${nodeBase}/${e}/distance`)
        : '';
      const distance = distText.trim() === '' ? undefined : distText.trim().split(/\s+/).map(Number);
      return { node, cpus: parseCpuList(cpulist).filter((c) => onlineSet.has(c)), distance };
    });
  return { cpus, numa };
}

export function loadTopology(root: Sysroot = new Sysroot()): Topology {
  return new Topology(readTopologyInput(root));
}
