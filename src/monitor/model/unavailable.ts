import type { Diagnostic } from '../../platform/backend.js';

/** Paths in a reason (`/sys/class/powercap/intel-rapl:0/energy_uj`). */
const PATH = /\/[^\s;,()]+/g;

/** One path standing for several: their common start and end around `…`. */
function mergePaths(paths: readonly string[]): string {
  if (paths.every((p) => p === paths[0])) return paths[0]!;
  let head = 0;
  while (paths.every((p) => p[head] !== undefined && p[head] === paths[0]![head])) head++;
  let tail = 0;
  const shortest = Math.min(...paths.map((p) => p.length));
  while (tail < shortest - head && paths.every((p) => p.at(-1 - tail) === paths[0]!.at(-1 - tail))) tail++;
  return `${paths[0]!.slice(0, head)}…${tail > 0 ? paths[0]!.slice(-tail) : ''}`;
}

/**
 * "Not available" as lines: one per backend and reason, with a count and the names concerned
 * where several entries share it (reasons that differ only in a path count as one; the paths
 * are merged into one pattern).
 */
export function collapseDiagnostics(diagnostics: readonly Diagnostic[]): string[] {
  const groups = new Map<string, Diagnostic[]>();
  for (const d of diagnostics) {
    const key = `${d.backend}\0${d.reason.replace(PATH, '/')}`;
    groups.set(key, [...(groups.get(key) ?? []), d]);
  }
  return [...groups.values()].map((same) => {
    const first = same[0]!;
    if (same.length === 1)
      return `${first.backend}${first.signal ? ` ${first.signal}` : ''}: ${first.reason}`;
    const pathsAt = same.map((d) => d.reason.match(PATH) ?? []);
    let k = 0;
    const reason = first.reason.replace(PATH, () => {
      const at = k++;
      return mergePaths(pathsAt.map((p) => p[at] ?? ''));
    });
    const prefix = `${first.backend}::`;
    const names = [...new Set(same.flatMap((d) => (d.signal ? [d.signal.replace(prefix, '')] : [])))];
    const shown = names.length > 6 ? `${names.slice(0, 6).join(', ')}, …` : names.join(', ');
    return `${first.backend} (${same.length}×${shown ? `: ${shown}` : ''}): ${reason}`;
  });
}
