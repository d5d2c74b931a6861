import { join } from 'node:path';
import { InvalidArgumentError } from '../platform/errors.js';
import { processIdentity } from '../platform/process.js';
import { WriteLockedError } from './errors.js';
import { LIMITS } from './limits.js';
import { type Log, secureMakeFile, secureReadFile } from './secure-files.js';
import { hasControlChars, shown } from './text.js';

export const PROFILER_LOCK = 'PROFILER_LOCK';

/** A profile name is shown in reports and used as a key: printable, bounded. */
export function checkProfileName(name: string): void {
  if (name === '' || name.length > 255 || hasControlChars(name)) {
    throw new InvalidArgumentError('profile name must be 1-255 printable characters');
  }
}

/** Region names reported for one profile, each with the uid charged for keeping it. */
interface ReportedRegions {
  /** uid charged for the profile name itself (the first reporter). */
  namedBy: number;
  regions: Map<string, number>;
}

const bytesOf = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * Which processes run under which profile name, and the region names they reported when they
 * stopped (GEOPM's runtime-profiling hooks). One admin process at a time may collect them: the
 * holder of PROFILER_LOCK (its pid is stored in the run dir; a dead holder frees it). Reported
 * names are kept until collected, so what they may cost is capped per profile, per uid and in
 * all (LIMITS); a report past a cap is refused whole.
 */
export class ProfileRegistry {
  private readonly pids = new Map<string, Set<number>>();
  private readonly reported = new Map<string, ReportedRegions>();
  private readonly bytesByUser = new Map<number, number>();
  private bytesTotal = 0;

  constructor(
    private readonly runDir: string,
    private readonly log: Log,
  ) {}

  add(name: string, pid: number): void {
    checkProfileName(name);
    const set = this.pids.get(name) ?? new Set<number>();
    this.pids.set(name, set);
    set.add(pid);
  }

  /** Removes `pid` (of user `uid`) from its profile, recording the regions it reports. */
  stop(name: string, pid: number, uid: number, regionNames: readonly string[]): void {
    for (const r of regionNames) {
      if (bytesOf(r) > LIMITS.regionNameBytes || r.includes('\0'))
        throw new InvalidArgumentError(`region names must be at most ${LIMITS.regionNameBytes} bytes`);
    }
    const kept = this.reported.get(name);
    const fresh = [...new Set(regionNames)].filter((r) => !kept?.regions.has(r));
    if (fresh.length > 0) {
      // A new profile entry also keeps its name, charged to its first reporter.
      const bytes = fresh.reduce((sum, r) => sum + bytesOf(r), kept ? 0 : bytesOf(name));
      this.checkRoom(name, uid, (kept?.regions.size ?? 0) + fresh.length, bytes);
      const entry = kept ?? { namedBy: uid, regions: new Map<string, number>() };
      for (const r of fresh) entry.regions.set(r, uid);
      this.reported.set(name, entry);
      this.charge(uid, bytes);
    }
    this.forget(pid, name);
  }

  /** Region names kept now, of all profiles (each counted once per profile). */
  get keptNames(): number {
    let n = 0;
    for (const entry of this.reported.values()) n += entry.regions.size;
    return n;
  }

  /** Bytes of region and profile names kept now, charged to `uid`, or to all users. */
  keptBytes(uid?: number): number {
    return uid === undefined ? this.bytesTotal : (this.bytesByUser.get(uid) ?? 0);
  }

  private checkRoom(name: string, uid: number, regions: number, bytes: number): void {
    const pop = 'an administrator collects them with PlatformPopProfileRegionNames';
    if (regions > LIMITS.regionsPerProfile) {
      throw new InvalidArgumentError(
        `profile "${shown(name)}" would keep ${regions} region names, over the cap of ${LIMITS.regionsPerProfile} per profile (${pop})`,
      );
    }
    const ofUser = (this.bytesByUser.get(uid) ?? 0) + bytes;
    if (ofUser > LIMITS.regionBytesPerUser) {
      throw new InvalidArgumentError(
        `region names of uid ${uid} would take ${ofUser} bytes, over the cap of ${LIMITS.regionBytesPerUser} bytes per user (${pop})`,
      );
    }
    if (this.bytesTotal + bytes > LIMITS.regionBytesTotal) {
      throw new InvalidArgumentError(
        `region names of all users would take ${this.bytesTotal + bytes} bytes, over the cap of ${LIMITS.regionBytesTotal} bytes (${pop})`,
      );
    }
  }

  private charge(uid: number, bytes: number): void {
    const left = (this.bytesByUser.get(uid) ?? 0) + bytes;
    if (left > 0) this.bytesByUser.set(uid, left);
    else this.bytesByUser.delete(uid);
    this.bytesTotal += bytes;
  }

  forget(pid: number, name: string): void {
    const set = this.pids.get(name);
    set?.delete(pid);
    if (set?.size === 0) this.pids.delete(name);
  }

  private lockPath(): string {
    return join(this.runDir, PROFILER_LOCK);
  }

  /** Pid holding PROFILER_LOCK, if that process is still alive. */
  holder(): number | undefined {
    const pid = Number(secureReadFile(this.lockPath(), { log: this.log })?.trim() || 'NaN');
    return Number.isInteger(pid) && pid > 0 && processIdentity(pid) ? pid : undefined;
  }

  /** Takes PROFILER_LOCK for `pid`; throws if another live process holds it. */
  takeLock(pid: number): void {
    const holder = this.holder();
    if (holder === pid) return;
    if (holder !== undefined) throw new WriteLockedError(`${PROFILER_LOCK} is held by PID ${holder}`);
    secureMakeFile(this.lockPath(), `${pid}\n`);
  }

  pidsOf(name: string, caller: number): number[] {
    checkProfileName(name);
    this.takeLock(caller);
    return [...(this.pids.get(name) ?? [])].sort((a, b) => a - b);
  }

  popRegions(name: string, caller: number): string[] {
    checkProfileName(name);
    if (this.holder() !== caller) {
      throw new WriteLockedError(
        `PID ${caller} must hold ${PROFILER_LOCK} (call PlatformGetProfilePids first)`,
      );
    }
    const entry = this.reported.get(name);
    if (!entry) return [];
    this.reported.delete(name);
    this.charge(entry.namedBy, -bytesOf(name));
    for (const [region, uid] of entry.regions) this.charge(uid, -bytesOf(region));
    return [...entry.regions.keys()].sort();
  }
}
