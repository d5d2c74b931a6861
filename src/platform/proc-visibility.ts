import { readFileSync } from 'node:fs';
import { parseStatus } from './process.js';

/**
 * Whether /proc shows this process the processes of others. A /proc mounted with
 * `hidepid=noaccess|invisible` shows a process (or its files) to a viewer in the mount's group
 * (`gid=`; root's group 0 when not given) and otherwise only where the viewer may ptrace-read it:
 * the same user with no capability the viewer lacks, or a viewer with CAP_SYS_PTRACE.
 * `hidepid=ptraceable` asks for the ptrace right alone, the group aside (fs/proc/base.c,
 * has_pid_permissions; kernel/ptrace.c). joulegated identifies each caller from /proc (uid,
 * start time, capabilities), so a daemon that cannot see its callers has to refuse them: other
 * users', and root's that hold capabilities outside the daemon's bounding set.
 */

/** hidepid's settings; /proc's options print them as numbers before Linux 5.8, as names since. */
const HIDEPID_BY_NUMBER: Record<string, HidePid> = {
  '0': 'off',
  '1': 'noaccess',
  '2': 'invisible',
  '4': 'ptraceable',
};
export type HidePid = 'off' | 'noaccess' | 'invisible' | 'ptraceable';

/** CAP_SYS_PTRACE's bit in a capability set (linux/capability.h). */
const CAP_SYS_PTRACE_BIT = 19n;

export interface ProcMountOptions {
  hidepid: HidePid;
  /** The group whose members see every process (`gid=`), if the mount names one. */
  gid?: number;
}

/**
 * The options of the proc filesystem mounted at /proc, from a /proc/self/mountinfo text (the
 * last mount there is the one in use), or undefined when /proc is not a proc mount. Each line
 * is "id parent major:minor root mount-point options [optional…] - type source super-options".
 */
export function procMountOptions(mountinfo: string): ProcMountOptions | undefined {
  let found: ProcMountOptions | undefined;
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 6 || fields[4] !== '/proc') continue;
    if (fields[dash + 1] !== 'proc') {
      found = undefined; // something else mounted over /proc
      continue;
    }
    const options: ProcMountOptions = { hidepid: 'off' };
    for (const option of (fields[dash + 3] ?? '').split(',')) {
      const [key, value = ''] = option.split('=');
      if (key === 'hidepid') options.hidepid = HIDEPID_BY_NUMBER[value] ?? (value as HidePid);
      if (key === 'gid' && /^\d+$/.test(value)) options.gid = Number(value);
    }
    found = options;
  }
  return found;
}

/** What a process brings to /proc's question: its effective capabilities and its groups. */
export interface Viewer {
  capEff: bigint;
  /** Effective and supplementary group ids. */
  groups: readonly number[];
}

/**
 * Why /proc, mounted with `options`, hides other users' processes (`invisible`, `ptraceable`)
 * or their files (`noaccess`) from `viewer` (called `who` in the text), or undefined when it
 * shows them.
 */
export function procHidesOthers(
  options: ProcMountOptions | undefined,
  viewer: Viewer,
  who: string,
): string | undefined {
  if (options === undefined || options.hidepid === 'off') return undefined;
  if (((viewer.capEff >> CAP_SYS_PTRACE_BIT) & 1n) === 1n) return undefined;
  if (options.hidepid === 'ptraceable') {
    return `/proc is mounted with hidepid=ptraceable, which shows another user's process, or one with capabilities ${who} lacks, only to holders of CAP_SYS_PTRACE, and ${who} lacks it`;
  }
  const group = options.gid ?? 0;
  if (viewer.groups.includes(group)) return undefined;
  const mounted = options.gid === undefined ? options.hidepid : `${options.hidepid},gid=${options.gid}`;
  return `/proc is mounted with hidepid=${mounted}, which shows another user's process, or one with capabilities ${who} lacks, only to group ${group} and to holders of CAP_SYS_PTRACE, and ${who} has neither`;
}

/**
 * procHidesOthers for this process, from its own mountinfo and status; undefined too when these
 * cannot be read or parsed (the question is asked to explain, never to decide).
 */
export function procHidesOthersFromSelf(who: string): string | undefined {
  try {
    const options = procMountOptions(readFileSync('/proc/self/mountinfo', 'utf8'));
    const { capEff, gid } = parseStatus(readFileSync('/proc/self/status', 'utf8'));
    return procHidesOthers(options, { capEff, groups: [gid, ...(process.getgroups?.() ?? [])] }, who);
  } catch {
    return undefined;
  }
}
