import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { libc } from './libc.js';
import { wrapIoError } from './sysroot.js';

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

/** The text after `key:` on its line of a /proc status text, or undefined. */
export function statusField(text: string, key: string): string | undefined {
  const label = `${key}:`;
  let at = 0;
  if (!text.startsWith(label)) {
    at = text.indexOf(`\n${label}`) + 1;
    if (at === 0) return undefined;
  }
  const end = text.indexOf('\n', at);
  return text.slice(at + label.length, end < 0 ? undefined : end).trim();
}

/** Effective uid/gid and CapEff from a /proc/<pid>/status text. */
export function parseStatus(text: string): { uid: number; gid: number; capEff: bigint } {
  const uids = statusField(text, 'Uid')?.split(/\s+/);
  const gids = statusField(text, 'Gid')?.split(/\s+/);
  const cap = statusField(text, 'CapEff');
  if (!uids || !gids || cap === undefined || !/^[0-9a-f]+$/i.test(cap))
    throw new Error('malformed /proc status');
  const uid = Number(uids[1]);
  const gid = Number(gids[1]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error('malformed /proc status');
  return { uid, gid, capEff: BigInt(`0x${cap}`) };
}

/**
 * One buffer for every /proc read (the daemon reads on one thread and each text is copied out),
 * grown to the longest text seen. readFileSync costs an fstat and a buffer per read besides,
 * on a path the daemon takes several times per client.
 */
let procText = Buffer.allocUnsafe(4096);

/**
 * The text of /proc/<pid>/<file>, or undefined when the process is gone (no such entry, or it
 * exited while being read: ESRCH). Any other failure is thrown (PermissionError where /proc
 * refuses, as with `hidepid`): a process hidden from us is not a process that exited.
 */
export function readProc(pid: number, file: string): string | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const path = `/proc/${pid}/${file}`;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    return goneOrThrow(err, path);
  }
  try {
    let length = 0;
    for (;;) {
      if (length === procText.length) {
        const bigger = Buffer.allocUnsafe(2 * length);
        procText.copy(bigger);
        procText = bigger;
      }
      const n = readSync(fd, procText, length, procText.length - length, null);
      if (n === 0) break;
      length += n;
    }
    // Only digits and field names are parsed: latin1 keeps every byte, and a command name's
    // UTF-8 never yields a ')' that was not there.
    return procText.toString('latin1', 0, length);
  } catch (err) {
    return goneOrThrow(err, path);
  } finally {
    closeSync(fd);
  }
}

function goneOrThrow(err: unknown, path: string): undefined {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ESRCH') return undefined;
  throw wrapIoError(err, path);
}

const isZombie = (status: string) => /^State:\s*Z/m.test(status);

/**
 * What /proc/<pid>/status says of a live process (effective uid and gid, CapEff); undefined
 * when it is gone or a zombie. Which process that was is for the caller to confirm afterwards
 * (a pidfd, a start time).
 */
export function processStatus(pid: number): { uid: number; gid: number; capEff: bigint } | undefined {
  const status = readProc(pid, 'status');
  // A zombie has exited: it can no longer talk to us, and its pid is about to be reused.
  if (status === undefined || isZombie(status)) return undefined;
  return parseStatus(status);
}

/** A process's identity and its effective capabilities, read together (processFacts). */
export interface ProcessFacts extends ProcessIdentity {
  capEff: bigint;
}

/**
 * Identity and capabilities of a live process, or undefined when it does not exist (or
 * vanished meanwhile). The status (ids, capabilities) is read before the stat (start time): a
 * start time that still matches the one expected says the status was that process's too,
 * since a pid is given to a new process only after the old one is gone.
 */
export function processFacts(pid: number): ProcessFacts | undefined {
  const status = processStatus(pid);
  const stat = status && readProc(pid, 'stat');
  if (status === undefined || stat === undefined) return undefined;
  return { pid, uid: status.uid, gid: status.gid, startTicks: parseStartTicks(stat), capEff: status.capEff };
}

/** Identity of a live process, or undefined when it does not exist (or vanished meanwhile). */
export function processIdentity(pid: number): ProcessIdentity | undefined {
  const facts = processFacts(pid);
  return facts && { pid, uid: facts.uid, gid: facts.gid, startTicks: facts.startTicks };
}

/** Whether CAP_SYS_ADMIN is in an effective capability set (CapEff of /proc/<pid>/status). */
export function capSysAdminIn(capEff: bigint): boolean {
  return ((capEff >> CAP_SYS_ADMIN_BIT) & 1n) === 1n;
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
 * suspend included (CLOCK_BOOTTIME, the clock /proc/uptime shows). Both are that clock truncated
 * to 1/100 s, so a process that started before a moment this returns never shows a later start
 * time. Asked for every connection that joins the bus: one clock_gettime, where reading
 * /proc/uptime took an open, a read and a close.
 */
export function ticksSinceBoot(): number {
  clockTicks ??= sysconfClockTicks();
  return Math.floor((bootClockCentiseconds() * clockTicks) / 100);
}

const CLOCK_BOOTTIME = 7;
const timespec = Buffer.alloc(16);

/** CLOCK_BOOTTIME in whole 1/100 s; from /proc/uptime where libc cannot be called. */
function bootClockCentiseconds(): number {
  let ok = false;
  try {
    ok = libc().clock_gettime(CLOCK_BOOTTIME, timespec) === 0;
  } catch {
    ok = false; // no koffi here
  }
  if (ok)
    return Number(timespec.readBigInt64LE(0)) * 100 + Math.floor(Number(timespec.readBigInt64LE(8)) / 1e7);
  return parseUptimeCentiseconds(readFileSync('/proc/uptime', 'utf8'));
}

/** The first figure of /proc/uptime ("12345.67 …") in whole 1/100 s. */
export function parseUptimeCentiseconds(text: string): number {
  const [whole = '0', fraction = ''] = text.split(' ')[0]!.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0').slice(0, 2));
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
  let status: string | undefined;
  try {
    status = readProc(pid, 'status');
  } catch {
    return true; // kill found it, /proc hides it from us: it exists, whatever its state
  }
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
    return capSysAdminIn(parseStatus(status).capEff);
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
