import { readFileSync } from 'node:fs';
import { libc } from './libc.js';

/**
 * Facts about client processes, always from the machine's real /proc (never the sysroot:
 * fixture trees fake hardware, not the processes talking to the daemon).
 */

/** CAP_SYS_ADMIN is capability 21 (linux/capability.h). */
const CAP_SYS_ADMIN_BIT = 21n;

export interface ProcessIdentity {
  pid: number;
  /** Effective uid and gid (GEOPM's psutil uids().effective / gids().effective). */
  uid: number;
  gid: number;
  /** Start time in clock ticks after boot: field 22 of /proc/<pid>/stat. */
  startTicks: number;
}

/** Field 22 (starttime) of a /proc/<pid>/stat line; the command name may contain spaces and ')'. */
export function parseStartTicks(stat: string): number {
  const close = stat.lastIndexOf(')');
  if (close < 0) throw new Error('malformed /proc stat line');
  // After ") " come fields 3.. (state is field 3), so field 22 is index 19 of the rest.
  const rest = stat.slice(close + 2).split(' ');
  const value = Number(rest[19]);
  if (!Number.isInteger(value)) throw new Error('malformed /proc stat line');
  return value;
}

/** Effective uid/gid and CapEff from a /proc/<pid>/status text. */
export function parseStatus(text: string): { uid: number; gid: number; capEff: bigint } {
  const field = (key: string) => new RegExp(`^${key}:\\s*(.*)$`, 'm').exec(text)?.[1];
  const uids = field('Uid')?.split(/\s+/);
  const gids = field('Gid')?.split(/\s+/);
  const cap = field('CapEff');
  if (!uids || !gids || cap === undefined) throw new Error('malformed /proc status');
  return { uid: Number(uids[1]), gid: Number(gids[1]), capEff: BigInt(`0x${cap.trim()}`) };
}

function readProc(pid: number, file: string): string | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return undefined;
  }
}

const isZombie = (status: string) => /^State:\s*Z/m.test(status);

/** Identity of a live process, or undefined when it does not exist (or vanished meanwhile). */
export function processIdentity(pid: number): ProcessIdentity | undefined {
  const stat = readProc(pid, 'stat');
  const status = readProc(pid, 'status');
  if (stat === undefined || status === undefined) return undefined;
  // A zombie has exited: it can no longer talk to us, and its pid is about to be reused.
  if (isZombie(status)) return undefined;
  const s = parseStatus(status);
  return { pid, uid: s.uid, gid: s.gid, startTicks: parseStartTicks(stat) };
}

/**
 * Whether `pid` still names the process that started at `startTicks` and has not exited: one
 * read of /proc/<pid>/stat (state and start time). A pid and a start time name one process for
 * the life of the boot, so a recycled pid never passes.
 */
export function isRunning(pid: number, startTicks: number): boolean {
  const stat = readProc(pid, 'stat');
  if (stat === undefined) return false;
  try {
    // State (field 3) follows the command name: Z (zombie) and X (dead) have exited.
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    return state !== 'Z' && state !== 'X' && parseStartTicks(stat) === startTicks;
  } catch {
    return false;
  }
}

/**
 * Now, in the clock of process start times (field 22 of /proc/<pid>/stat): ticks since boot,
 * suspend included, from /proc/uptime. Both truncate to 1/100 s, so a process that started
 * before a moment this returns never shows a later start time.
 */
export function ticksSinceBoot(): number {
  const [whole = '0', fraction = ''] = readFileSync('/proc/uptime', 'utf8').split(' ')[0]!.split('.');
  const centiseconds = Number(whole) * 100 + Number(fraction.padEnd(2, '0').slice(0, 2));
  clockTicks ??= sysconfClockTicks();
  return Math.floor((centiseconds * clockTicks) / 100);
}

/**
 * Whether `pid` names a process that has not exited. kill(pid, 0) answers for any user's
 * process (EPERM: it exists, owned by someone else), even where /proc hides other users'
 * processes (hidepid); a zombie, where /proc shows it, has exited and counts as gone.
 */
export function processExists(pid: number): boolean {
  // kill(0 or a negative pid) would address a process group, not one process.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const status = readProc(pid, 'status');
  return status === undefined || !isZombie(status);
}

/** True when `pid` is alive and is still the process described by `expected`. */
export function isSameProcess(expected: ProcessIdentity): boolean {
  const now = processIdentity(expected.pid);
  return (
    now !== undefined &&
    now.startTicks === expected.startTicks &&
    now.uid === expected.uid &&
    now.gid === expected.gid
  );
}

/** CAP_SYS_ADMIN in the effective set of `pid` (not uid 0: GEOPM v3.0.1's rule). */
export function hasCapSysAdmin(pid: number): boolean {
  const status = readProc(pid, 'status');
  if (status === undefined) return false;
  try {
    return ((parseStatus(status).capEff >> CAP_SYS_ADMIN_BIT) & 1n) === 1n;
  } catch {
    return false;
  }
}

let clockTicks: number | undefined;
let bootTime: number | undefined;

/** Seconds since the epoch at which the process started (GEOPM's create_time). */
export function startTimeSeconds(startTicks: number): number {
  if (bootTime === undefined) {
    const m = /^btime\s+(\d+)/m.exec(readFileSync('/proc/stat', 'utf8'));
    bootTime = m ? Number(m[1]) : 0;
  }
  clockTicks ??= sysconfClockTicks();
  return bootTime + startTicks / clockTicks;
}

const SC_CLK_TCK = 2;
function sysconfClockTicks(): number {
  const v = libc().sysconf(SC_CLK_TCK);
  return v > 0 ? v : 100;
}

/** Session id of `pid` (getsid(2)), or undefined if the process is gone. */
export function sessionIdOf(pid: number): number | undefined {
  const sid = libc().getsid(pid);
  return sid > 0 ? sid : undefined;
}

/**
 * CPU time (user + system, seconds) that one thread has used, from its /proc stat file (e.g.
 * `/proc/self/task/<tid>/stat`); undefined once the thread is gone. A budget of CPU time holds
 * however busy the machine is, where a wall-clock one cuts honest work short under load.
 */
export function threadCpuSeconds(statPath: string): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(statPath, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command's closing parenthesis: state is the 3rd, utime the 14th, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  if (!Number.isFinite(ticks)) return undefined;
  clockTicks ??= sysconfClockTicks();
  return ticks / clockTicks;
}
