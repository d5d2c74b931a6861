import { type ProcessStat, processKey } from './proc-stat.js';

/**
 * CPU time of a group of processes between two readings, placed on the CPUs they ran on. Pure.
 *
 * The group's cumulative time is Σ over its living members of own + reaped time (a reaped
 * child's whole time lands in its parent's cutime/cstime), plus the last known time of members
 * that vanished without a member to reap them. So between two readings:
 * - a member seen in both adds its growth of own + reaped time;
 * - a new member (forked in the interval, or a reused pid: another start time) adds all of it;
 * - a member that vanished adds nothing more: its last known time was counted. When its nearest
 *   living ancestor in the group reaped it, that ancestor's reaped time now holds its whole
 *   time, so the ancestor adds only the part after the vanished member's last reading (the
 *   "tail", and the whole time of children too short-lived to be seen).
 * Each amount is placed on the CPU its process last ran on (field `processor`, a sample).
 */
export interface PlacedCpuTime {
  /** µs per Linux CPU number. */
  perCpuUs: Float64Array;
  /** µs whose CPU is not a CPU of the node (beyond `perCpuUs`). */
  unplacedUs: number;
}

export function processTimeDelta(
  before: readonly ProcessStat[],
  after: readonly ProcessStat[],
  numCpu: number,
  usPerTick: number,
): PlacedCpuTime {
  const previous = new Map(before.map((p) => [processKey(p), p]));
  const alive = new Map(after.map((p) => [processKey(p), p]));
  const beforeByPid = new Map(before.map((p) => [p.pid, p]));
  const reapedByAncestor = tracedVanished(before, alive, beforeByPid);

  const placed: PlacedCpuTime = { perCpuUs: new Float64Array(numCpu), unplacedUs: 0 };
  for (const [key, now] of alive) {
    const was = previous.get(key);
    const grown =
      was === undefined
        ? now.ownTicks + now.reapedTicks
        : now.ownTicks - was.ownTicks + (now.reapedTicks - was.reapedTicks);
    // The tail estimate can fall below zero when a vanished child was reaped elsewhere after
    // all (its parent died first and init reaped it): no negative time is placed.
    const ticks = Math.max(0, grown - (reapedByAncestor.get(key) ?? 0));
    addAt(placed, now.processor, ticks * usPerTick);
  }
  return placed;
}

/**
 * Last known own + reaped ticks of the members that vanished, summed per nearest living
 * ancestor in the group (found through the earlier reading's parent links).
 */
function tracedVanished(
  before: readonly ProcessStat[],
  alive: ReadonlyMap<string, ProcessStat>,
  beforeByPid: ReadonlyMap<number, ProcessStat>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const gone of before) {
    if (alive.has(processKey(gone))) continue;
    let parent = beforeByPid.get(gone.ppid);
    const visited = new Set<number>([gone.pid]);
    while (parent !== undefined && !alive.has(processKey(parent)) && !visited.has(parent.pid)) {
      visited.add(parent.pid);
      parent = beforeByPid.get(parent.ppid);
    }
    if (parent === undefined || !alive.has(processKey(parent))) continue; // reaped outside the group
    const key = processKey(parent);
    out.set(key, (out.get(key) ?? 0) + gone.ownTicks + gone.reapedTicks);
  }
  return out;
}

function addAt(placed: PlacedCpuTime, cpu: number, us: number): void {
  if (us === 0) return;
  if (Number.isInteger(cpu) && cpu >= 0 && cpu < placed.perCpuUs.length) placed.perCpuUs[cpu]! += us;
  else placed.unplacedUs += us;
}

/** Spreads `us` evenly over `cpus` (a cgroup's usage with nothing better to place it by). */
export function spreadEvenly(us: number, cpus: readonly number[], numCpu: number): PlacedCpuTime {
  const placed: PlacedCpuTime = { perCpuUs: new Float64Array(numCpu), unplacedUs: 0 };
  const inRange = cpus.filter((c) => c >= 0 && c < numCpu);
  if (inRange.length === 0) {
    placed.unplacedUs = us;
    return placed;
  }
  for (const c of inRange) placed.perCpuUs[c]! += us / inRange.length;
  return placed;
}

/**
 * Scales a placement (process samples of a cgroup) to a measured total (the cgroup's
 * usage_usec growth): the cgroup counter is exact, the samples only say where it ran.
 */
export function scalePlacement(placement: PlacedCpuTime, totalUs: number): PlacedCpuTime {
  let sum = placement.unplacedUs;
  for (const v of placement.perCpuUs) sum += v;
  const factor = sum > 0 ? totalUs / sum : 0;
  return {
    perCpuUs: placement.perCpuUs.map((v) => v * factor),
    unplacedUs: placement.unplacedUs * factor,
  };
}

/** µs of a placement on a set of CPUs (a device's CPUs). */
export function timeOn(placed: PlacedCpuTime, cpus: readonly number[]): number {
  let sum = 0;
  for (const c of cpus) sum += placed.perCpuUs[c] ?? 0;
  return sum;
}
