import { ParseError } from '../../platform/errors.js';
import { parseCpuList, type Sysroot } from '../../platform/sysroot.js';

/** Where cpufreq keeps one directory per frequency policy. */
export const CPUFREQ_DIR = '/sys/devices/system/cpu/cpufreq';

/** One cpufreq policy: a set of CPUs that always run at the same frequency. */
export interface Policy {
  /** N of policyN. */
  id: number;
  /** Absolute path (without the sysroot) of the policy directory. */
  dir: string;
  /** Online CPUs governed by this policy (affected_cpus). */
  cpus: number[];
}

/**
 * Parses a sysfs attribute holding one number. Attributes that cannot be read right now hold
 * words such as "<unknown>" or "<unsupported>": those are ParseErrors naming the file.
 */
export function parseSysfsNumber(text: string, file: string): number {
  const t = text.trim();
  const v = Number(t);
  if (t === '' || !Number.isFinite(v))
    throw new ParseError(`${file}: expected a number, found "${t.slice(0, 40)}"`);
  return v;
}

/** CPUs of a policy from affected_cpus (space separated, online only) or related_cpus. */
export function parsePolicyCpus(text: string, file: string): number[] {
  const t = text.trim();
  if (t === '') return [];
  // affected_cpus is space separated ("0 8"); accept the cpulist form too ("0,8" / "0-3").
  const cpus = t.split(/\s+/).flatMap((part) => parseCpuList(part));
  if (cpus.some((c) => !Number.isInteger(c))) throw new ParseError(`${file}: bad cpu list "${t}"`);
  return cpus;
}

/** Where each CPU has its own directory (`cpuN/`), holding `cpufreq/` on kernels without policies. */
export const CPU_DIR = '/sys/devices/system/cpu';

/**
 * Lists the frequency policies under the sysroot; [] when cpufreq has no driver here. Two layouts
 * exist: `cpufreq/policyN` (with `cpuN/cpufreq` a link to it) and, on older kernels, a
 * `cpuN/cpufreq` directory per CPU with no policy directory. A CPU no policy governs is taken
 * from its own directory, which speaks for that CPU alone (its related_cpus is not trusted:
 * captures list CPU 0 in every one).
 */
export function discoverPolicies(root: Sysroot): Policy[] {
  const out: Policy[] = [];
  for (const entry of root.list(CPUFREQ_DIR)) {
    const m = /^policy(\d+)$/.exec(entry);
    if (!m) continue;
    const dir = `${CPUFREQ_DIR}/${entry}`;
    const file = root.exists(`${dir}/affected_cpus`) ? `${dir}/affected_cpus` : `${dir}/related_cpus`;
    const cpus = root.exists(file) ? parsePolicyCpus(root.readText(file), file) : [];
    // A policy whose CPUs are all offline governs nothing we can address.
    if (cpus.length > 0) out.push({ id: Number(m[1]), dir, cpus });
  }
  const governed = new Set(out.flatMap((p) => p.cpus));
  for (const entry of root.list(CPU_DIR)) {
    const m = /^cpu(\d+)$/.exec(entry);
    const dir = `${CPU_DIR}/${entry}/cpufreq`;
    if (!m || governed.has(Number(m[1])) || !root.exists(`${dir}/scaling_driver`)) continue;
    out.push({ id: Number(m[1]), dir, cpus: [Number(m[1])] });
  }
  return out.sort((a, b) => a.id - b.id);
}
