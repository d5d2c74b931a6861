import type { PlatformIO } from '../platform/platform-io.js';
import { type ProcessIdentity, processIdentity, sessionIdOf } from '../platform/process.js';
import type { Caller } from './caller-access.js';
import { ControlLock } from './control-lock.js';
import type { Log } from './secure-files.js';

/** The session side of write mode: its holder must always have a watched session. */
export interface WatchedSessions {
  has(pid: number): boolean;
  /** Opens a session for a process that did not ask for one, so that its exit is noticed. */
  watch(process: ProcessIdentity): Promise<void>;
}

/**
 * The single system-wide write mode (ControlLock) and who gets it: the caller's session
 * leader while that process lives (a tool run from a shell keeps its settings until the shell
 * exits), else the caller. Call only inside the session manager's lock.
 */
export class WriteMode {
  private readonly lock: ControlLock;

  constructor(
    runDir: string,
    pio: PlatformIO,
    log: Log,
    private readonly sessions: WatchedSessions,
  ) {
    this.lock = new ControlLock(runDir, pio, log);
  }

  holder(): number | undefined {
    return this.lock.holder();
  }

  /** At daemon start: ends write mode whose holder exited while no daemon ran. */
  async recover(): Promise<void> {
    const holder = this.lock.holder();
    if (holder !== undefined && !this.sessions.has(holder)) {
      await this.lock.release(`holder pid ${holder} is gone at daemon start`);
    }
  }

  /** Gives write mode to `caller` (which has a session) or its session leader; see ControlLock.acquire. */
  async enter(caller: Caller): Promise<void> {
    const sid = sessionIdOf(caller.pid);
    const leader = sid !== undefined && sid !== caller.pid ? processIdentity(sid) : undefined;
    const taken = await this.lock.acquire(leader ? leader.pid : caller.pid, caller.pid);
    if (!taken || !leader || this.sessions.has(leader.pid)) return;
    try {
      await this.sessions.watch(leader);
    } catch (err) {
      // The leader exited meanwhile: nobody would watch it, so write mode ends right away.
      await this.lock.release(`session leader ${leader.pid} is gone`);
      throw err;
    }
  }

  /** Restores the saved controls and ends write mode, if anyone (or `pid`, if given) holds it. */
  async end(reason: string, pid?: number): Promise<void> {
    const holder = this.lock.holder();
    if (holder !== undefined && (pid === undefined || holder === pid)) await this.lock.release(reason);
  }

  /** Writes the saved controls back, keeping write mode (PlatformRestoreControl). */
  restoreKeeping(): Promise<void> {
    return this.lock.restoreKeeping();
  }

  /** PlatformLockControl / PlatformUnlockControl. */
  setAdminLock(locked: boolean): void {
    this.lock.setAdminLock(locked);
  }
}
