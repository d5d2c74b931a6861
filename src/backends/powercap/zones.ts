import { ParseError } from '../../platform/errors.js';
import type { Sysroot } from '../../platform/sysroot.js';
import { readUnsigned } from '../sysfs-reader.js';

export const POWERCAP_DIR = '/sys/class/powercap';

/** What a RAPL zone measures, from its `name` file. */
export type ZoneKind = 'package' | 'core' | 'uncore' | 'dram' | 'psys';

/** A zone directory name: `intel-rapl:0`, `intel-rapl:a:2`, `intel-rapl-mmio:0`. */
export interface ZoneId {
  mmio: boolean;
  zone: number;
  subzone?: number;
}

/**
 * The kernel names a zone `<parent>:<id in hex>` (drivers/powercap/powercap_sys.c), so the
 * eleventh package zone is `intel-rapl:a` and `intel-rapl:10` is zone 16. Which package a zone
 * measures comes from its `name` file, never from this number.
 */
export function parseZoneDirName(entry: string): ZoneId | undefined {
  const m = /^intel-rapl(-mmio)?:([0-9a-f]+)(?::([0-9a-f]+))?$/.exec(entry);
  if (!m) return undefined;
  return {
    mmio: m[1] !== undefined,
    zone: Number.parseInt(m[2]!, 16),
    ...(m[3] !== undefined ? { subzone: Number.parseInt(m[3], 16) } : {}),
  };
}

/** `package-1`, `package-0-die-1`, `core`, `uncore`, `dram`, `psys` → kind and package id if named. */
export function parseZoneName(text: string, what: string): { kind: ZoneKind; packageId?: number } {
  const name = text.trim();
  const pkg = /^package-(\d+)(?:-die-\d+)?$/.exec(name);
  if (pkg) return { kind: 'package', packageId: Number(pkg[1]) };
  if (name === 'core' || name === 'uncore' || name === 'dram' || name === 'psys') return { kind: name };
  throw new ParseError(`${what}: unknown RAPL zone name "${name.slice(0, 40)}"`);
}

/** One powercap constraint (`constraint_N_*`), with the limits the kernel states for it. */
export interface Constraint {
  index: number;
  name: string;
  maxPowerUw?: number;
  minPowerUw?: number;
  maxTimeWindowUs?: number;
  minTimeWindowUs?: number;
}

export interface Zone {
  /** Absolute path (before the sysroot prefix) of the zone directory. */
  dir: string;
  id: ZoneId;
  kind: ZoneKind;
  /** Linux physical package id, or undefined for psys (whole platform). */
  packageId?: number;
  /** The counter counts modulo this (max_energy_range_uj + 1), in µJ. */
  modulusUj: bigint;
  /** Why energy_uj cannot be read by this process, or undefined when it can. */
  energyDenied?: string;
  hasEnergy: boolean;
  /** The long-term constraint (power limit control), when the zone has one. */
  longTerm?: Constraint;
}

export const ENERGY_DENIED_REASON =
  'root-only since Linux 5.10 (CVE-2020-8694); read it through joulegated with an access grant';

/**
 * An attribute only a bound depends on: empty, torn, garbled or refused loses that bound alone,
 * the reason kept in `problems` (a refusal is a reason too, never a silent gap).
 */
function optionalNumber(root: Sysroot, path: string, feeds: string, problems: string[]): number | undefined {
  if (!root.exists(path)) return undefined;
  try {
    return Number(readUnsigned(root, path));
  } catch (err) {
    problems.push(`${(err as Error).message}; ${feeds} is not known`);
    return undefined;
  }
}

/** A constraint's name, or '' when its file is absent or unreadable (the reason kept). */
function constraintName(root: Sysroot, file: string, problems: string[]): string {
  if (!root.exists(file)) return '';
  try {
    return root.readText(file).trim();
  } catch (err) {
    problems.push(`${(err as Error).message}; the constraint is taken as unnamed`);
    return '';
  }
}

/** Reads the constraints of a zone and picks the long-term one (falls back to constraint 0). */
function readLongTerm(root: Sysroot, dir: string, problems: string[]): Constraint | undefined {
  const indices = root
    .list(dir)
    .map((f) => /^constraint_(\d+)_power_limit_uw$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  if (indices.length === 0) return undefined;
  const named = indices.map((i) => ({
    i,
    name: constraintName(root, `${dir}/constraint_${i}_name`, problems),
  }));
  const pick = named.find((c) => c.name === 'long_term') ?? named[0]!;
  const p = `${dir}/constraint_${pick.i}`;
  const c: Constraint = { index: pick.i, name: pick.name };
  const maxPowerUw = optionalNumber(root, `${p}_max_power_uw`, 'the largest power limit', problems);
  const minPowerUw = optionalNumber(root, `${p}_min_power_uw`, 'the smallest power limit', problems);
  const maxTimeWindowUs = optionalNumber(
    root,
    `${p}_max_time_window_us`,
    'the longest time window',
    problems,
  );
  const minTimeWindowUs = optionalNumber(
    root,
    `${p}_min_time_window_us`,
    'the shortest time window',
    problems,
  );
  return {
    ...c,
    ...(maxPowerUw !== undefined ? { maxPowerUw } : {}),
    ...(minPowerUw !== undefined ? { minPowerUw } : {}),
    ...(maxTimeWindowUs !== undefined ? { maxTimeWindowUs } : {}),
    ...(minTimeWindowUs !== undefined ? { minTimeWindowUs } : {}),
  };
}

/**
 * Finds every RAPL zone under /sys/class/powercap. Subzones take their package from the parent
 * zone (`intel-rapl:1:0` belongs to whatever package `intel-rapl:1` names). A zone whose files
 * required files (name, max_energy_range_uj beside energy_uj) are garbled is reported through
 * `problems` and skipped; an optional attribute loses only what it feeds (see optionalNumber).
 */
export function discoverZones(root: Sysroot, problems: string[] = []): Zone[] {
  const entries = root.list(POWERCAP_DIR);
  const parsed = entries
    .map((e) => ({ entry: e, id: parseZoneDirName(e) }))
    .filter((x) => x.id !== undefined);
  // A zone-like name we cannot parse is named, not dropped.
  for (const entry of entries.filter((e) => /^intel-rapl(-mmio)?:/.test(e) && !parseZoneDirName(e))) {
    problems.push(
      `${POWERCAP_DIR}/${entry}: not a zone name joulegate knows (intel-rapl:N[:M], N and M in hex); left out`,
    );
  }
  const byParent = new Map<string, number | undefined>();
  const zones: Zone[] = [];
  // Parents first so subzones can inherit their package id.
  parsed.sort((a, b) => (a.id!.subzone === undefined ? 0 : 1) - (b.id!.subzone === undefined ? 0 : 1));
  for (const { entry, id } of parsed) {
    const dir = `${POWERCAP_DIR}/${entry}`;
    try {
      const { kind, packageId: named } = parseZoneName(root.readText(`${dir}/name`), `${dir}/name`);
      const parentKey = `${id!.mmio}:${id!.zone}`;
      const packageId = id!.subzone === undefined ? named : byParent.get(parentKey);
      if (id!.subzone === undefined) byParent.set(parentKey, named);
      if (kind !== 'psys' && packageId === undefined) {
        throw new ParseError(`${dir}: cannot tell which package the ${kind} zone belongs to`);
      }
      const hasEnergy = root.exists(`${dir}/energy_uj`);
      if (!hasEnergy) problems.push(`${dir}/energy_uj: missing; the ${kind} zone has no energy counter`);
      let modulusUj = 0n;
      if (hasEnergy) {
        const rangePath = `${dir}/max_energy_range_uj`;
        modulusUj = readUnsigned(root, rangePath) + 1n;
      }
      const zone: Zone = { dir, id: id!, kind, modulusUj, hasEnergy };
      if (packageId !== undefined) zone.packageId = packageId;
      if (hasEnergy && !root.readable(`${dir}/energy_uj`)) zone.energyDenied = ENERGY_DENIED_REASON;
      const longTerm = readLongTerm(root, dir, problems);
      if (longTerm) zone.longTerm = longTerm;
      zones.push(zone);
    } catch (err) {
      problems.push(`${(err as Error).message}; zone ${dir} left out`);
    }
  }
  return zones.sort((a, b) => a.dir.localeCompare(b.dir, 'en', { numeric: true }));
}
