import { libc } from '../../platform/libc.js';

/**
 * User and group lookups through the C library's NSS (getpwnam_r, getgrnam_r, getgrgid_r,
 * getgrouplist), so users and groups from LDAP/SSSD resolve exactly as they do for login.
 * Membership comes from the databases, not from a process's current supplementary groups: a
 * group an admin added after the user logged in counts.
 */

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
}

export interface GroupEntry {
  name: string;
  gid: number;
}

const ERANGE = 34;

/**
 * Calls a *_r lookup, growing the scratch buffer while libc reports ERANGE (large LDAP groups
 * need more than the usual few kilobytes). Returns the filled entry, or undefined if not found.
 */
function lookup<T extends object>(
  call: (out: T, buf: Buffer, result: unknown[]) => number,
  what: string,
): T | undefined {
  for (let size = 4096; size <= 1 << 24; size *= 4) {
    const out = {} as T;
    const result: unknown[] = [null];
    const rc = call(out, Buffer.alloc(size), result);
    if (rc === ERANGE) continue;
    if (rc !== 0) throw new Error(`NSS lookup of ${what} failed with errno ${rc}`);
    return result[0] === null ? undefined : out;
  }
  throw new Error(`NSS lookup of ${what} needs more than 16 MiB`);
}

type Call = (out: object, buf: Buffer, result: unknown[]) => number;

function passwdLookup(call: Call, what: string): PasswdEntry | undefined {
  const pw = lookup<{ pw_name: string; pw_uid: number; pw_gid: number }>(call, what);
  return pw && { name: pw.pw_name, uid: pw.pw_uid, gid: pw.pw_gid };
}

function groupLookup(call: Call, what: string): GroupEntry | undefined {
  const gr = lookup<{ gr_name: string; gr_gid: number }>(call, what);
  return gr && { name: gr.gr_name, gid: gr.gr_gid };
}

export function userByName(name: string): PasswdEntry | undefined {
  return passwdLookup(
    (out, buf, res) => libc().getpwnam_r(name, out, buf, buf.length, res),
    `user "${name}"`,
  );
}

export function userById(uid: number): PasswdEntry | undefined {
  return passwdLookup((out, buf, res) => libc().getpwuid_r(uid, out, buf, buf.length, res), `uid ${uid}`);
}

export function groupByName(name: string): GroupEntry | undefined {
  return groupLookup(
    (out, buf, res) => libc().getgrnam_r(name, out, buf, buf.length, res),
    `group "${name}"`,
  );
}

export function groupById(gid: number): GroupEntry | undefined {
  return groupLookup((out, buf, res) => libc().getgrgid_r(gid, out, buf, buf.length, res), `gid ${gid}`);
}

/** Gids of every group `user` belongs to per NSS, including `primaryGid`. */
export function groupIdsOf(user: string, primaryGid: number): number[] {
  let capacity = 64;
  for (;;) {
    const gids = new Uint32Array(capacity);
    const count = [capacity];
    const rc = libc().getgrouplist(user, primaryGid, gids, count);
    // On -1 libc stores the needed size in count; retry with exactly that much room.
    if (rc >= 0) return [...gids.subarray(0, count[0])];
    capacity = Math.max(count[0]!, capacity * 2);
  }
}

/** Names of the user's NSS groups; gids without a name (stale /etc/group) are skipped. */
export function groupNamesOf(user: PasswdEntry): string[] {
  const names = new Set<string>();
  for (const gid of groupIdsOf(user.name, user.gid)) {
    const group = groupById(gid);
    if (group) names.add(group.name);
  }
  return [...names];
}
