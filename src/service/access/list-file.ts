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

/** A line of a list file that cannot be a name (see isListName), kept for the warning. */
export interface RejectedLine {
  /** 1-based line number. */
  line: number;
  text: string;
}

/**
 * parseAccessList for a file the daemon trusts: lines that cannot be names (whitespace inside,
 * longer than MAX_NAME_LENGTH, control characters) are left out and returned for a warning.
 */
export function readAccessList(text: string): { names: string[]; rejected: RejectedLine[] } {
  const names: string[] = [];
  const rejected: RejectedLine[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (isListName(line)) names.push(line);
    else rejected.push({ line: i + 1, text: line });
  }
  return { names, rejected };
}

/**
 * Largest list file the daemon reads or writes. Every name of a large node fits many times
 * over; a bigger file would cost each session open its reading time and memory.
 */
export const MAX_LIST_FILE_BYTES = 1024 * 1024;

/** File contents for `names`: one per line with a trailing newline, order kept as given. */
export function formatAccessList(names: readonly string[]): string {
  return names.map((n) => `${n}\n`).join('');
}

/** Longer than any signal name; a list entry beyond it is garbage, not a name from another node. */
export const MAX_NAME_LENGTH = 256;

/** Whether `text` can be a name in a list file: not empty, short, no whitespace or control characters. */
export function isListName(text: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it rejects
  return text !== '' && text.length <= MAX_NAME_LENGTH && !/[\s\x00-\x1f\x7f]/.test(text);
}

/**
 * A name that cannot round-trip through the file format (empty, whitespace inside, a leading
 * `#`) would silently change meaning when read back, and an absurdly long one can only be
 * garbage, so they are refused even with --force.
 */
export function checkListNames(kind: 'signals' | 'controls', names: readonly string[]): void {
  const bad = names.filter((n) => !isListName(n) || n.startsWith('#'));
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
