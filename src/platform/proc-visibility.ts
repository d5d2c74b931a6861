import { readFileSync, statSync } from 'node:fs';
import { parseStatus, statusField } from './process.js';

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
const HIDEPID = new Map<string, string>([
  ['0', 'off'],
  ['1', 'noaccess'],
  ['2', 'invisible'],
  ['4', 'ptraceable'],
]);
const HIDEPID_NAMES = new Set(HIDEPID.values());

/** CAP_SYS_PTRACE's bit in a capability set (linux/capability.h). */
const CAP_SYS_PTRACE_BIT = 19n;

export interface ProcMountOptions {
  /** off, noaccess, invisible, ptraceable, or a value this code does not know (taken as hiding). */
  hidepid: string;
  /** The group whose members see every process (`gid=`), if the mount names one. */
  gid?: number;
}

/**
 * The options of the proc filesystem mounted at /proc, from a /proc/self/mountinfo text, or
 * undefined when /proc is not a proc mount. Each line is "id parent major:minor root
 * mount-point options [optional…] - type source super-options". With `device` ("major:minor"
 * of /proc, as stat gives it) the line of that device is the one in use; without it, or where
 * no line has it, the last line at /proc (mounts are listed in the order they were made, which
 * a moved mount can break).
 */
export function procMountOptions(mountinfo: string, device?: string): ProcMountOptions | undefined {
  let last: string[] | undefined;
  let ofDevice: string[] | undefined;
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 6 || fields[4] !== '/proc') continue;
    last = fields.slice(dash + 1);
    if (fields[2] === device) ofDevice = last;
  }
  const [type, , superOptions = ''] = ofDevice ?? last ?? [];
  if (type !== 'proc') return undefined;
  const options: ProcMountOptions = { hidepid: 'off' };
  for (const option of superOptions.split(',')) {
    const [key, value = ''] = option.split('=');
    if (key === 'hidepid') options.hidepid = HIDEPID.get(value) ?? value;
    if (key === 'gid' && /^\d+$/.test(value)) options.gid = Number(value);
  }
  return options;
}

/** What a process brings to /proc's question: its effective capabilities and its groups. */
export interface Viewer {
  capEff: bigint;
  /** The file-system gid and the supplementary groups (what the kernel's in_group_p asks). */
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
  const shown = HIDEPID_NAMES.has(options.hidepid) ? options.hidepid : `${options.hidepid} (not known here)`;
  const hiding = `another user's process, or one with capabilities ${who} lacks`;
  if (options.hidepid === 'ptraceable') {
    return `/proc is mounted with hidepid=ptraceable, which shows ${hiding}, only to holders of CAP_SYS_PTRACE, and ${who} lacks it`;
  }
  const group = options.gid ?? 0;
  if (viewer.groups.includes(group)) return undefined;
  const mounted = options.gid === undefined ? shown : `${shown},gid=${options.gid}`;
  return `/proc is mounted with hidepid=${mounted}, which shows ${hiding}, only to group ${group} and to holders of CAP_SYS_PTRACE, and ${who} has neither`;
}

/** "major:minor" of a device number as Linux packs it (the form mountinfo prints). */
function deviceName(dev: number): string {
  const n = BigInt(dev);
  const major = ((n >> 8n) & 0xfffn) | ((n >> 32n) & ~0xfffn);
  const minor = (n & 0xffn) | ((n >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}

/** How long an answer of procHidesOthersFromSelf stands: /proc may be remounted meanwhile. */
const ANSWER_LIFETIME_MS = 60_000;
let answered: { who: string; at: number; text: string | undefined } | undefined;

/**
 * procHidesOthers for this process, from its own mountinfo and status, kept for a minute: the
 * daemon asks on refusals, which a caller can repeat at will, and mountinfo grows with the
 * mounts. Undefined too when these cannot be read or parsed (the question is asked to explain a
 * refusal, never to decide one).
 */
export function procHidesOthersFromSelf(who: string): string | undefined {
  const now = Date.now();
  if (answered?.who === who && now - answered.at < ANSWER_LIFETIME_MS) return answered.text;
  let text: string | undefined;
  try {
    const options = procMountOptions(
      readFileSync('/proc/self/mountinfo', 'utf8'),
      deviceName(statSync('/proc').dev),
    );
    const status = readFileSync('/proc/self/status', 'utf8');
    const { capEff } = parseStatus(status);
    // The kernel's in_group_p asks the file-system gid, the fourth on the Gid line.
    const fsgid = Number(statusField(status, 'Gid')?.split(/\s+/)[3]);
    text = procHidesOthers(options, { capEff, groups: [fsgid, ...(process.getgroups?.() ?? [])] }, who);
  } catch {
    text = undefined;
  }
  answered = { who, at: now, text };
  return text;
}
