import { join } from 'node:path';
import { InvalidArgumentError } from '../platform/errors.js';
import { processIdentity } from '../platform/process.js';
import { WriteLockedError } from './errors.js';
import { type Log, secureMakeFile, secureReadFile } from './secure-files.js';
import { hasControlChars } from './text.js';

export const PROFILER_LOCK = 'PROFILER_LOCK';

/** A profile name is shown in reports and used as a key: printable, bounded. */
export function checkProfileName(name: string): void {
  if (name === '' || name.length > 255 || hasControlChars(name)) {
    throw new InvalidArgumentError('profile name must be 1-255 printable characters');
  }
}

/**
 * Which processes run under which profile name, and the region names they reported when they
 * stopped (GEOPM's runtime-profiling hooks). One admin process at a time may collect them: the
 * holder of PROFILER_LOCK (its pid is stored in the run dir; a dead holder frees it).
 */
export class ProfileRegistry {
  private readonly pids = new Map<string, Set<number>>();
  private readonly regions = new Map<string, Set<string>>();

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

  /** Removes `pid` from its profile, recording the regions it reports. */
  stop(name: string, pid: number, regionNames: readonly string[]): void {
    for (const r of regionNames) {
      if (r.length > 4096 || r.includes('\0'))
        throw new InvalidArgumentError('region names must be at most 4096 characters');
    }
    const set = this.regions.get(name) ?? new Set<string>();
    this.regions.set(name, set);
    for (const r of regionNames) set.add(r);
    this.forget(pid, name);
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
    const out = [...(this.regions.get(name) ?? [])].sort();
    this.regions.delete(name);
    return out;
  }
}
