import { PermissionError } from '../platform/errors.js';
import type { Sysroot } from '../platform/sysroot.js';
import { listPids, readIfPresent, readProcessStat, subdirectories } from './kernel-files.js';
import { type ProcessStat, parseChildren, parseProcessStat, processKey } from './proc-stat.js';

/** The processes of a tree at one moment, with what could not be read. */
export interface ProcessTreeReading {
  processes: ProcessStat[];
  /** Processes of the tree that exist but could not be read (permission), one line each. */
  warnings: string[];
}

/**
 * Reads the process tree under `rootPid`: the root and all its descendants, found through
 * /proc/<pid>/task/<tid>/children when the kernel has it (CONFIG_PROC_CHILDREN), otherwise by
 * scanning every /proc/<pid>/stat for parent pids.
 *
 * `known` are the members of the previous reading: those still alive (same pid and start time)
 * stay members even when no longer descendants of the root — an orphan re-parented to init is
 * still the application's work. Pass the root's start time as `rootStartTicks` once known, so a
 * reused root pid is not taken for the root.
 */
export function readProcessTree(
  root: Sysroot,
  rootPid: number,
  known: readonly ProcessStat[] = [],
  rootStartTicks?: number,
): ProcessTreeReading {
  const warnings: string[] = [];
  const members = new Map<number, ProcessStat>();
  const rootStat = readProcessStat(root, rootPid); // a permission error here is the consumer's error
  if (rootStat !== undefined && (rootStartTicks === undefined || rootStat.startTicks === rootStartTicks)) {
    members.set(rootPid, rootStat);
  }
  for (const k of known) {
    if (members.has(k.pid)) continue;
    const now = readQuietly(root, k.pid, warnings);
    if (now !== undefined && now.startTicks === k.startTicks) members.set(k.pid, now);
  }
  if (members.size === 0) return { processes: [], warnings };

  const scanned = hasChildrenFiles(root, rootStat ?? members.values().next().value!)
    ? undefined
    : scanParents(root, warnings);
  const queue = [...members.keys()];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    const children = scanned ? (scanned.childrenOf.get(pid) ?? []) : childrenOf(root, pid);
    for (const child of children) {
      if (members.has(child)) continue;
      const stat = scanned ? scanned.stats.get(child) : readQuietly(root, child, warnings);
      // A child that exited, or whose pid now belongs to a process of another parent, is skipped.
      if (stat === undefined || stat.ppid !== pid) continue;
      members.set(child, stat);
      queue.push(child);
    }
  }
  return { processes: [...members.values()], warnings };
}

/** A process's stat, undefined when it exited; a permission failure becomes a warning. */
function readQuietly(root: Sysroot, pid: number, warnings: string[]): ProcessStat | undefined {
  try {
    return readProcessStat(root, pid);
  } catch (err) {
    if (!(err instanceof PermissionError)) throw err;
    warnings.push(err.message);
    return undefined;
  }
}

function hasChildrenFiles(root: Sysroot, any: ProcessStat): boolean {
  return root.exists(`/proc/${any.pid}/task/${any.pid}/children`);
}

/** Children of every thread of `pid` (a child belongs to the thread that forked it). */
function childrenOf(root: Sysroot, pid: number): number[] {
  const out = new Set<number>();
  for (const tid of subdirectories(root, `/proc/${pid}/task`)) {
    const file = `/proc/${pid}/task/${tid}/children`;
    const text = readIfPresent(root, file);
    if (text !== undefined) for (const child of parseChildren(text, file)) out.add(child);
  }
  return [...out];
}

/** Every readable process's stat and a parent → children index (kernels without children files). */
function scanParents(
  root: Sysroot,
  warnings: string[],
): { stats: Map<number, ProcessStat>; childrenOf: Map<number, number[]> } {
  const stats = new Map<number, ProcessStat>();
  const children = new Map<number, number[]>();
  let unreadable = 0;
  for (const pid of listPids(root)) {
    let text: string | undefined;
    try {
      text = readIfPresent(root, `/proc/${pid}/stat`);
    } catch (err) {
      if (!(err instanceof PermissionError)) throw err;
      unreadable++;
      continue;
    }
    if (text === undefined) continue;
    const stat = parseProcessStat(text, `/proc/${pid}/stat`);
    stats.set(pid, stat);
    const list = children.get(stat.ppid);
    if (list) list.push(pid);
    else children.set(stat.ppid, [pid]);
  }
  if (unreadable > 0) {
    warnings.push(
      `${unreadable} processes in /proc could not be read (permission); descendants among them are missed`,
    );
  }
  return { stats, childrenOf: children };
}

/** Reads the stats of the given pids (a cgroup's members); exited ones are skipped. */
export function readProcesses(root: Sysroot, pids: readonly number[], warnings: string[]): ProcessStat[] {
  const out: ProcessStat[] = [];
  const seen = new Set<string>();
  for (const pid of pids) {
    const stat = readQuietly(root, pid, warnings);
    if (stat === undefined || seen.has(processKey(stat))) continue;
    seen.add(processKey(stat));
    out.push(stat);
  }
  return out;
}
