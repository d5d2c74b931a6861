import { endianness } from 'node:os';
import { ParseError } from '../platform/errors.js';

/**
 * Pure parsers for the per-process /proc files attribution reads. Times stay in clock ticks
 * (USER_HZ) as the kernel writes them; callers convert with `microsecondsPerTick`.
 */

/** What attribution needs of one /proc/<pid>/stat line. */
export interface ProcessStat {
  pid: number;
  ppid: number;
  /** Field 22: start time in ticks after boot. With the pid, it tells a process from a reused pid. */
  startTicks: number;
  /** Fields 14 + 15: user + system time of all the process's threads, ticks. */
  ownTicks: number;
  /** Fields 16 + 17: time of children the process has waited for (reaped), ticks. */
  reapedTicks: number;
  /** Field 39: CPU the process last ran on (a sample, not a history). */
  processor: number;
}

/** Identity of a process across readings: a pid reused by a new process has another start time. */
export function processKey(p: Pick<ProcessStat, 'pid' | 'startTicks'>): string {
  return `${p.pid}@${p.startTicks}`;
}

// Offsets in the fields after the command name: field n (1-based) is at n − 3.
const PPID = 4 - 3;
const UTIME = 14 - 3;
const STIME = 15 - 3;
const CUTIME = 16 - 3;
const CSTIME = 17 - 3;
const STARTTIME = 22 - 3;
const PROCESSOR = 39 - 3;

/** Parses a /proc/<pid>/stat line. The command name (field 2) may hold spaces and ')'. */
export function parseProcessStat(text: string, file = '/proc/<pid>/stat'): ProcessStat {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) throw new ParseError(`${file}: no "(command)" field`);
  const pid = Number(text.slice(0, open).trim());
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  if (rest.length <= PROCESSOR) {
    throw new ParseError(`${file}: ${rest.length + 2} fields, expected at least ${PROCESSOR + 3}`);
  }
  const field = (i: number, name: string): number => {
    const v = Number(rest[i]);
    if (!Number.isInteger(v)) throw new ParseError(`${file}: ${name} "${rest[i]}" is not an integer`);
    return v;
  };
  if (!Number.isInteger(pid) || pid <= 0)
    throw new ParseError(`${file}: bad pid "${text.slice(0, open).trim()}"`);
  return {
    pid,
    ppid: field(PPID, 'ppid'),
    startTicks: field(STARTTIME, 'starttime'),
    ownTicks: field(UTIME, 'utime') + field(STIME, 'stime'),
    // cutime/cstime are signed in the kernel's format; a negative sum would be a kernel bug.
    reapedTicks: Math.max(0, field(CUTIME, 'cutime') + field(CSTIME, 'cstime')),
    processor: field(PROCESSOR, 'processor'),
  };
}

/** Parses /proc/<pid>/task/<tid>/children: the pids of that thread's children, space separated. */
export function parseChildren(text: string, file = '/proc/<pid>/task/<tid>/children'): number[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  return trimmed.split(/\s+/).map((t) => {
    const pid = Number(t);
    if (!Number.isInteger(pid) || pid <= 0) throw new ParseError(`${file}: bad pid "${t}"`);
    return pid;
  });
}

/** Parses a cgroup.procs (or tasks) file: one pid per line. */
export function parsePidList(text: string, file = 'cgroup.procs'): number[] {
  return parseChildren(text, file);
}

/** AT_CLKTCK in the ELF auxiliary vector: the kernel's USER_HZ, the unit of /proc times. */
const AT_CLKTCK = 17n;
const AT_NULL = 0n;

/**
 * USER_HZ from a /proc/self/auxv image (pairs of native words: type, value). Undefined when the
 * vector has no AT_CLKTCK entry. `wordBytes` is 8 on 64-bit, 4 on 32-bit systems.
 */
export function clockTicksFromAuxv(
  auxv: Buffer,
  wordBytes: 4 | 8 = 8,
  littleEndian = endianness() === 'LE',
): number | undefined {
  const word = (offset: number): bigint => {
    if (wordBytes === 8) return littleEndian ? auxv.readBigUInt64LE(offset) : auxv.readBigUInt64BE(offset);
    return BigInt(littleEndian ? auxv.readUInt32LE(offset) : auxv.readUInt32BE(offset));
  };
  for (let at = 0; at + 2 * wordBytes <= auxv.length; at += 2 * wordBytes) {
    const type = word(at);
    if (type === AT_NULL) return undefined;
    if (type === AT_CLKTCK) {
      const hz = Number(word(at + wordBytes));
      return hz > 0 ? hz : undefined;
    }
  }
  return undefined;
}

/** µs per clock tick for a USER_HZ (100 Hz → 10,000 µs). */
export function microsecondsPerTick(ticksPerSecond: number): number {
  return 1e6 / ticksPerSecond;
}
