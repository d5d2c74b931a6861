import { ParseError } from '../../platform/errors.js';

/**
 * Pure parsers for the /proc files PROCFS reads. Each takes the file's text and the path to name
 * in errors; none touches the file system.
 */

/** CPU time in USER_HZ ticks: busy and total per CPU (indexed by Linux CPU number). */
export interface CpuTimes {
  /** Ticks spent not idle (user+nice+system+irq+softirq+steal). NaN where the CPU has no line. */
  busy: Float64Array;
  /** All ticks (busy + idle + iowait). NaN where the CPU has no line. */
  total: Float64Array;
  /** The aggregate `cpu` line. */
  allBusy: number;
  allTotal: number;
}

// /proc/stat columns: user nice system idle iowait irq softirq steal guest guest_nice. guest and
// guest_nice are already counted in user and nice, so only the first eight make up the total.
const IDLE = 3;
const IOWAIT = 4;
const COUNTED_COLUMNS = 8;
const SPACE = 32;
const ZERO = 48;
const NINE = 57;

/**
 * Busy and total ticks of one "cpu…" line from `from` (just after the cpu id) to `to`. Scans
 * character codes instead of splitting: /proc/stat of a 256-CPU node has 2,500 numbers and is
 * parsed on every batch.
 */
function cpuLine(text: string, from: number, to: number, file: string): { busy: number; total: number } {
  let total = 0;
  let idle = 0;
  let column = 0;
  let i = from;
  while (i < to && column < COUNTED_COLUMNS) {
    const c = text.charCodeAt(i);
    if (c === SPACE || c === 9 || c === 13) {
      i++;
      continue;
    }
    let v = 0;
    let digits = 0;
    for (let d = text.charCodeAt(i); d >= ZERO && d <= NINE; d = text.charCodeAt(++i)) {
      v = v * 10 + (d - ZERO);
      digits++;
    }
    const next = i < to ? text.charCodeAt(i) : SPACE;
    if (digits === 0 || (next !== SPACE && next !== 9 && next !== 13)) {
      throw new ParseError(`${file}: bad number in "${text.slice(from, to).trim().slice(0, 60)}"`);
    }
    total += v;
    if (column === IDLE || column === IOWAIT) idle += v;
    column++;
  }
  // Kernels older than 2.6.11 have fewer columns; four (user nice system idle) is the minimum.
  if (column < 4)
    throw new ParseError(`${file}: too few columns in "${text.slice(from, to).trim().slice(0, 60)}"`);
  return { busy: total - idle, total };
}

/** Parses /proc/stat; `numCpu` sizes the per-CPU arrays (CPUs without a line stay NaN). */
export function parseProcStat(text: string, numCpu: number, file = '/proc/stat'): CpuTimes {
  const busy = new Float64Array(numCpu).fill(Number.NaN);
  const total = new Float64Array(numCpu).fill(Number.NaN);
  let allBusy = Number.NaN;
  let allTotal = Number.NaN;
  let start = 0;
  // The "cpu" lines come first; stop at the first other line after them.
  while (start < text.length && text.startsWith('cpu', start)) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    let i = start + 3;
    let cpu = -1;
    for (let d = text.charCodeAt(i); d >= ZERO && d <= NINE; d = text.charCodeAt(++i)) {
      cpu = (cpu < 0 ? 0 : cpu * 10) + (d - ZERO);
    }
    const c = text.charCodeAt(i);
    if (c !== SPACE && c !== 9)
      throw new ParseError(`${file}: bad cpu line "${text.slice(start, end).slice(0, 60)}"`);
    const times = cpuLine(text, i, end, file);
    if (cpu < 0) {
      allBusy = times.busy;
      allTotal = times.total;
    } else if (cpu < numCpu) {
      busy[cpu] = times.busy;
      total[cpu] = times.total;
    }
    start = end + 1;
  }
  if (Number.isNaN(allTotal)) throw new ParseError(`${file}: no "cpu" line`);
  return { busy, total, allBusy, allTotal };
}

/**
 * Fraction of time busy between two readings of the same CPU, 0..1. NaN when it cannot be told:
 * no time passed, or the counters went backwards (the CPU was offlined and came back).
 */
export function busyFraction(busy0: number, total0: number, busy1: number, total1: number): number {
  const dTotal = total1 - total0;
  const dBusy = busy1 - busy0;
  if (!(dTotal > 0) || dBusy < 0 || dBusy > dTotal) return Number.NaN;
  return dBusy / dTotal;
}

export interface MemInfo {
  totalBytes: number;
  availableBytes: number;
  /** total − available: memory that cannot be given to a new program without swapping. */
  usedBytes: number;
}

/** Parses /proc/meminfo (values in kB). */
export function parseMeminfo(text: string, file = '/proc/meminfo'): MemInfo {
  const kb = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([\w()]+):\s+(\d+)(?:\s+kB)?\s*$/.exec(line);
    if (m) kb.set(m[1]!, Number(m[2]) * 1024);
  }
  const total = kb.get('MemTotal');
  if (total === undefined) throw new ParseError(`${file}: no MemTotal line`);
  // MemAvailable exists since Linux 3.14; before that free + buffers + page cache is the estimate.
  const available =
    kb.get('MemAvailable') ??
    (kb.get('MemFree') ?? Number.NaN) + (kb.get('Buffers') ?? 0) + (kb.get('Cached') ?? 0);
  if (Number.isNaN(available)) throw new ParseError(`${file}: neither MemAvailable nor MemFree`);
  return { totalBytes: total, availableBytes: available, usedBytes: total - available };
}

export interface DiskCounters {
  name: string;
  readBytes: number;
  writeBytes: number;
}

/** /proc/diskstats counts sectors of 512 bytes whatever the device's real sector size. */
export const DISKSTATS_SECTOR_BYTES = 512;

/** Parses /proc/diskstats: one entry per line (disks, partitions and virtual devices alike). */
export function parseDiskstats(text: string, file = '/proc/diskstats'): DiskCounters[] {
  const out: DiskCounters[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length === 1 && f[0] === '') continue;
    // major minor name reads merged sectors_read ms writes merged sectors_written ...
    if (f.length < 10) throw new ParseError(`${file}: too few columns in "${line.trim().slice(0, 60)}"`);
    const read = Number(f[5]);
    const written = Number(f[9]);
    if (!Number.isFinite(read) || !Number.isFinite(written)) {
      throw new ParseError(`${file}: bad number in "${line.trim().slice(0, 60)}"`);
    }
    out.push({
      name: f[2]!,
      readBytes: read * DISKSTATS_SECTOR_BYTES,
      writeBytes: written * DISKSTATS_SECTOR_BYTES,
    });
  }
  return out;
}

export interface NetCounters {
  name: string;
  rxBytes: number;
  txBytes: number;
}

/** Parses /proc/net/dev (two header lines, then "iface: rx… tx…"). */
export function parseNetDev(text: string, file = '/proc/net/dev'): NetCounters[] {
  const out: NetCounters[] = [];
  const lines = text.split('\n');
  if (!/\|/.test(lines[0] ?? '')) throw new ParseError(`${file}: missing header`);
  for (const line of lines.slice(2)) {
    if (line.trim() === '') continue;
    // Old kernels glue large counters to the colon ("eth0:123"), so split on it, not on spaces.
    const colon = line.indexOf(':');
    if (colon < 0) throw new ParseError(`${file}: no interface name in "${line.trim().slice(0, 60)}"`);
    const f = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/);
    const rx = Number(f[0]);
    const tx = Number(f[8]);
    if (f.length < 16 || !Number.isFinite(rx) || !Number.isFinite(tx)) {
      throw new ParseError(`${file}: bad counters in "${line.trim().slice(0, 60)}"`);
    }
    out.push({ name: line.slice(0, colon).trim(), rxBytes: rx, txBytes: tx });
  }
  return out;
}

/** Sums a counter over the entries `keep` accepts. */
export function sumOver<T extends { name: string }>(
  entries: readonly T[],
  keep: (name: string) => boolean,
  field: (e: T) => number,
): number {
  let sum = 0;
  for (const e of entries) if (keep(e.name)) sum += field(e);
  return sum;
}
