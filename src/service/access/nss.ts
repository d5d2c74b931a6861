import { JoulegateError } from '../../platform/errors.js';
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

/** Scratch buffer sizes tried in turn while libc reports ERANGE (large LDAP groups need more). */
const SCRATCH_SIZES = [4096, 16384, 65536, 1 << 18, 1 << 20, 1 << 22, 1 << 24];

/**
 * How long the daemon waits for one NSS lookup (a network directory may hang). The lookup
 * then goes on on its worker thread, but the request that asked for it fails.
 */
export const NSS_TIMEOUT_MS = 10_000;

/** What one *_r attempt means: the entry, not found (undefined), or retry with more room. */
const RETRY = Symbol('retry');
function outcome<T>(rc: number, out: T, result: unknown[], what: string): T | undefined | typeof RETRY {
  if (rc === ERANGE) return RETRY;
  if (rc !== 0) throw new JoulegateError(`NSS lookup of ${what} failed with errno ${rc}`);
  return result[0] === null ? undefined : out;
}

function tooLarge(what: string): Error {
  return new JoulegateError(`NSS lookup of ${what} needs more than 16 MiB`);
}

/**
 * Calls a *_r lookup, growing the scratch buffer while libc reports ERANGE. Returns the filled
 * entry, or undefined if not found.
 */
function lookup<T extends object>(
  call: (out: T, buf: Buffer, result: unknown[]) => number,
  what: string,
): T | undefined {
  for (const size of SCRATCH_SIZES) {
    const out = {} as T;
    const result: unknown[] = [null];
    const found = outcome(call(out, Buffer.alloc(size), result), out, result, what);
    if (found !== RETRY) return found;
  }
  throw tooLarge(what);
}

/** Runs a C call on a worker thread; rejects after NSS_TIMEOUT_MS. */
function offLoop(start: (done: (err: unknown, rc: number) => void) => void, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new JoulegateError(`NSS lookup of ${what} did not answer within ${NSS_TIMEOUT_MS / 1000} s`)),
      NSS_TIMEOUT_MS,
    );
    start((err, rc) => {
      clearTimeout(timer);
      if (err) reject(err instanceof Error ? err : new JoulegateError(String(err)));
      else resolve(rc);
    });
  });
}

/** lookup() with each attempt on a worker thread (see offLoop). */
async function lookupAsync<T extends object>(
  call: (out: T, buf: Buffer, result: unknown[], done: (err: unknown, rc: number) => void) => void,
  what: string,
): Promise<T | undefined> {
  for (const size of SCRATCH_SIZES) {
    const out = {} as T;
    const result: unknown[] = [null];
    const buf = Buffer.alloc(size);
    const found = outcome(await offLoop((done) => call(out, buf, result, done), what), out, result, what);
    if (found !== RETRY) return found;
  }
  throw tooLarge(what);
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

/** userById off the event loop, with a timeout (NSS_TIMEOUT_MS). */
export async function userByIdAsync(uid: number): Promise<PasswdEntry | undefined> {
  const pw = await lookupAsync<{ pw_name: string; pw_uid: number; pw_gid: number }>(
    (out, buf, res, done) => libc().getpwuid_r.async(uid, out, buf, buf.length, res, done),
    `uid ${uid}`,
  );
  return pw && { name: pw.pw_name, uid: pw.pw_uid, gid: pw.pw_gid };
}

async function groupByIdAsync(gid: number): Promise<GroupEntry | undefined> {
  const gr = await lookupAsync<{ gr_name: string; gr_gid: number }>(
    (out, buf, res, done) => libc().getgrgid_r.async(gid, out, buf, buf.length, res, done),
    `gid ${gid}`,
  );
  return gr && { name: gr.gr_name, gid: gr.gr_gid };
}

/** One getgrouplist attempt: the gids, or the room it asks for (libc stores it in count). */
function groupListOutcome(rc: number, gids: Uint32Array, count: number[]): number[] | number {
  return rc >= 0 ? [...gids.subarray(0, count[0])] : Math.max(count[0]!, gids.length * 2);
}

/** Gids of every group `user` belongs to per NSS, including `primaryGid`. */
export function groupIdsOf(user: string, primaryGid: number): number[] {
  let capacity = 64;
  for (;;) {
    const gids = new Uint32Array(capacity);
    const count = [capacity];
    const got = groupListOutcome(libc().getgrouplist(user, primaryGid, gids, count), gids, count);
    if (Array.isArray(got)) return got;
    capacity = got;
  }
}

async function groupIdsOfAsync(user: string, primaryGid: number): Promise<number[]> {
  let capacity = 64;
  for (;;) {
    const gids = new Uint32Array(capacity);
    const count = [capacity];
    const rc = await offLoop(
      (done) => libc().getgrouplist.async(user, primaryGid, gids, count, done),
      `the groups of "${user}"`,
    );
    const got = groupListOutcome(rc, gids, count);
    if (Array.isArray(got)) return got;
    capacity = got;
  }
}

/** Names of the user's NSS groups; gids without a name (stale /etc/group) are skipped. */
export function groupNamesOf(user: PasswdEntry): string[] {
  return namesOf(groupIdsOf(user.name, user.gid).map(groupById));
}

/** groupNamesOf off the event loop, with a timeout per lookup (NSS_TIMEOUT_MS). */
export async function groupNamesOfAsync(user: PasswdEntry): Promise<string[]> {
  const groups: (GroupEntry | undefined)[] = [];
  // One at a time: koffi caps the asynchronous calls in flight, and users may have hundreds of groups.
  for (const gid of await groupIdsOfAsync(user.name, user.gid)) groups.push(await groupByIdAsync(gid));
  return namesOf(groups);
}

function namesOf(groups: (GroupEntry | undefined)[]): string[] {
  const names = new Set<string>();
  for (const group of groups) if (group) names.add(group.name);
  return [...names];
}
