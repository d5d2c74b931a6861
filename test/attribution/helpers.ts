import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ProcessStat } from '../../src/attribution/proc-stat.js';

/** [ppid, starttime, utime, stime, cutime, cstime, processor], as test/fixtures/attribution/script.json writes them. */
export type ScriptedProcess = [number, number, number, number, number, number, number];

/** A full 52-field /proc/<pid>/stat line. */
export function statLine(pid: number, comm: string, p: ScriptedProcess): string {
  const [ppid, start, utime, stime, cutime, cstime, processor] = p;
  const head = `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1 4194560 120 0 0 0`;
  const mid = `${utime} ${stime} ${cutime} ${cstime} 20 0 1 0 ${start} 10485760 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17`;
  return `${head} ${mid} ${processor} 0 0 0 0 0 0 0 0 0 0 0 0 0\n`;
}

/** A ProcessStat for pure tests. */
export function proc(
  pid: number,
  ppid: number,
  startTicks: number,
  ownTicks: number,
  reapedTicks = 0,
  processor = 0,
): ProcessStat {
  return { pid, ppid, startTicks, ownTicks, reapedTicks, processor };
}

export function put(root: string, path: string, content: string): void {
  const full = join(root, path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, content);
}

/** Writes /proc/<pid>/stat under a sysroot, keeping the command name already there; null removes the process. */
export function writeProcess(root: string, pid: number, p: ScriptedProcess | null): void {
  const dir = join(root, 'proc', String(pid));
  if (p === null) {
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  let comm = `p${pid}`;
  try {
    const old = readFileSync(join(dir, 'stat'), 'utf8');
    comm = old.slice(old.indexOf('(') + 1, old.lastIndexOf(')'));
  } catch {
    // a new process: default name
  }
  put(root, `proc/${pid}/stat`, statLine(pid, comm, p));
}

/** /proc/stat from cumulative per-CPU [busy, idle] ticks (busy written as user time). */
export function procStat(cpus: readonly (readonly [number, number])[]): string {
  const busy = cpus.reduce((s, c) => s + c[0], 0);
  const idle = cpus.reduce((s, c) => s + c[1], 0);
  const lines = [`cpu  ${busy} 0 0 ${idle} 0 0 0 0 0 0`];
  cpus.forEach(([b, i], n) => {
    lines.push(`cpu${n} ${b} 0 0 ${i} 0 0 0 0 0 0`);
  });
  return `${lines.join('\n')}\nintr 0\nctxt 0\nbtime 1700000000\n`;
}
