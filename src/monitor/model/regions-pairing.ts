import type { RegionCall, RegionEvent } from './report-model.js';

/**
 * Pairs start/stop events into calls. Each name keeps its own stack, so recursive and repeated
 * calls of one region pair correctly (a stop closes that name's latest start, or the start with
 * its call id), and a region left open is closed at `endT` and flagged. A stop without a start is
 * reported, not guessed.
 */
export function pairRegionEvents(
  events: readonly RegionEvent[],
  endT: number,
): { calls: RegionCall[]; problems: string[] } {
  const stacks = new Map<string, { start: number; depth: number; call?: string }[]>();
  const calls: RegionCall[] = [];
  const problems: string[] = [];
  let depth = 0;
  const ordered = [...events].sort((a, b) => a.t - b.t);
  for (const e of ordered) {
    const stack = stacks.get(e.name) ?? [];
    stacks.set(e.name, stack);
    if (e.kind === 'start') {
      stack.push({ start: e.t, depth, ...(e.call === undefined ? {} : { call: e.call }) });
      depth++;
      continue;
    }
    const at = e.call === undefined ? stack.length - 1 : stack.findLastIndex((o) => o.call === e.call);
    const open = at < 0 ? undefined : stack.splice(at, 1)[0];
    if (!open) {
      problems.push(`region ${e.name}: stop at ${e.t.toFixed(3)} s without a start`);
      continue;
    }
    depth = Math.max(0, depth - 1);
    calls.push({ name: e.name, start: open.start, stop: e.t, depth: open.depth, open: false });
  }
  for (const [name, stack] of stacks) {
    for (const open of stack) {
      calls.push({
        name,
        start: open.start,
        stop: Math.max(open.start, endT),
        depth: open.depth,
        open: true,
      });
      problems.push(`region ${name}: started at ${open.start.toFixed(3)} s and never stopped`);
    }
  }
  calls.sort((a, b) => a.start - b.start || a.depth - b.depth);
  return { calls, problems };
}
