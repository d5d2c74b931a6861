import { InvalidArgumentError } from '../../platform/errors.js';

/**
 * The allow-list file format: one name per line. Surrounding whitespace (spaces, tabs) is
 * ignored, and so are blank lines and lines starting with `#`. There are no inline comments:
 * `NAME # note` is one (unknown) name and is later filtered out like any unsupported name.
 */
export function parseAccessList(text: string): string[] {
  const names: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    names.push(line);
  }
  return names;
}

/** File contents for `names`: one per line with a trailing newline, order kept as given. */
export function formatAccessList(names: readonly string[]): string {
  return names.map((n) => `${n}\n`).join('');
}

/** Longer than any signal name; a list entry beyond it is garbage, not a name from another node. */
export const MAX_NAME_LENGTH = 256;

/**
 * A name that cannot round-trip through the file format (empty, whitespace inside, a leading
 * `#`) would silently change meaning when read back, and an absurdly long one can only be
 * garbage, so they are refused even with --force.
 */
export function checkListNames(kind: 'signals' | 'controls', names: readonly string[]): void {
  const bad = names.filter(
    (n) => n === '' || n.length > MAX_NAME_LENGTH || /\s/.test(n) || n.startsWith('#'),
  );
  if (bad.length > 0) {
    const shown = bad
      .slice(0, 5)
      .map((n) => JSON.stringify(n.length > 40 ? `${n.slice(0, 40)}…` : n))
      .join(', ');
    throw new InvalidArgumentError(`Invalid ${kind} name in access list request: ${shown}`);
  }
}

/** Names in `wanted` that are not in `available`, in request order without repeats. */
export function unavailableNames(wanted: readonly string[], available: readonly string[]): string[] {
  const have = new Set(available);
  return [...new Set(wanted.filter((n) => !have.has(n)))];
}

/** Sorted, de-duplicated. */
export function sortedUnique(names: Iterable<string>): string[] {
  return [...new Set(names)].sort();
}

/** Refuses names this node does not support, with GEOPM's message (unless the caller forces). */
export function requireAvailable(
  kind: 'signals' | 'controls',
  wanted: readonly string[],
  available: readonly string[],
): void {
  const missing = unavailableNames(wanted, available);
  if (missing.length > 0) {
    throw new InvalidArgumentError(
      `Requested access to ${kind} that are not available: ${missing.join(', ')}`,
    );
  }
}
