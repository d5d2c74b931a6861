import { readdirSync, readFileSync } from 'node:fs';
import type { Sysroot } from '../platform/sysroot.js';
import { wrapIoError } from '../platform/sysroot.js';
import { clockTicksFromAuxv, type ProcessStat, parseProcessStat } from './proc-stat.js';

/**
 * The few file operations attribution's readers share. Everything is read under the sysroot
 * (fixture trees in tests, `/` on a node); "gone" is told apart from "not allowed".
 */

/** Codes of a file that vanished with its process or cgroup while we read it. */
const GONE = new Set(['ENOENT', 'ESRCH', 'ENODEV']);

/**
 * A file's text, or undefined when it is gone (the process exited, the cgroup was removed).
 * Permission failures throw a PermissionError naming the file; other errors name it too.
 */
export function readIfPresent(root: Sysroot, absolute: string): string | undefined {
  try {
    return readFileSync(root.path(absolute), 'utf8');
  } catch (err) {
    if (GONE.has((err as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw wrapIoError(err, absolute);
  }
}

/** Names of the sub-directories of a directory, sorted; [] when it is gone. */
export function subdirectories(root: Sysroot, absolute: string): string[] {
  try {
    return readdirSync(root.path(absolute), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  } catch (err) {
    if (GONE.has((err as NodeJS.ErrnoException).code ?? '')) return [];
    throw wrapIoError(err, absolute);
  }
}

/** One process's stat, or undefined when it has exited. */
export function readProcessStat(root: Sysroot, pid: number): ProcessStat | undefined {
  const file = `/proc/${pid}/stat`;
  const text = readIfPresent(root, file);
  return text === undefined ? undefined : parseProcessStat(text, file);
}

/** Pids of /proc's process directories. */
export function listPids(root: Sysroot): number[] {
  return subdirectories(root, '/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .sort((a, b) => a - b);
}

const DEFAULT_USER_HZ = 100;
const ARCHES_32_BIT = new Set(['arm', 'ia32', 'mips', 'mipsel', 'ppc', 's390']);
let cachedTicks: number | undefined;

/**
 * USER_HZ of the running kernel, from this process's auxiliary vector (the value sysconf
 * (_SC_CLK_TCK) returns). Falls back to 100, USER_HZ on every architecture Node runs on.
 */
export function kernelClockTicks(): number {
  if (cachedTicks !== undefined) return cachedTicks;
  try {
    const wordBytes = ARCHES_32_BIT.has(process.arch) ? 4 : 8;
    cachedTicks = clockTicksFromAuxv(readFileSync('/proc/self/auxv'), wordBytes) ?? DEFAULT_USER_HZ;
  } catch {
    cachedTicks = DEFAULT_USER_HZ;
  }
  return cachedTicks;
}
