import { randomUUID } from 'node:crypto';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { WriteLockedError } from './errors.js';
import { type Log, SECURE_DIR_MODE, secureMakeDirs, secureMakeFile, secureReadFile } from './secure-files.js';

export const CONTROL_LOCK = 'CONTROL_LOCK';
/** Present (0600, content "locked") while an admin has locked controls (PlatformLockControl). */
export const ADMIN_LOCK = 'CONTROL_ADMIN_LOCK';
export const SAVE_FILES = 'SAVE_FILES';

/**
 * The single system-wide write mode. Entering it saves every control of every backend into
 * SAVE_FILES (written under a temporary name, then renamed); leaving it writes them back. The
 * holder's pid lives in CONTROL_LOCK so a restarted daemon knows whom the saved state belongs to.
 */
export class ControlLock {
  /**
   * CONTROL_LOCK as last read or written: the daemon is its only writer (the run directory is
   * its own, 0700), so it is read from disk once, at the first question (a restarted daemon
   * learns there whom the saved state belongs to), and after a write that failed. Every session
   * close asks; a file read there cost each close an lstat, an open, a read and a close.
   */
  private known: { holder: number | undefined } | undefined;

  constructor(
    private readonly runDir: string,
    private readonly pio: PlatformIO,
    private readonly log: Log,
  ) {}

  private path(name: string): string {
    return join(this.runDir, name);
  }

  /** Pid (or session id) holding write mode, or undefined when free. */
  holder(): number | undefined {
    this.known ??= { holder: this.readHolder() };
    return this.known.holder;
  }

  private readHolder(): number | undefined {
    const text = secureReadFile(this.path(CONTROL_LOCK), { log: this.log })?.trim();
    if (!text) return undefined;
    const pid = Number(text);
    if (!Number.isInteger(pid) || pid <= 0) {
      this.log(`joulegated: ignoring malformed ${CONTROL_LOCK} content "${text.slice(0, 40)}"`);
      return undefined;
    }
    return pid;
  }

  /** Writes CONTROL_LOCK (empty: free); what is known of it is what reached the disk. */
  private writeHolder(pid: number | undefined): void {
    this.known = undefined;
    secureMakeFile(this.path(CONTROL_LOCK), pid === undefined ? '' : `${pid}\n`);
    this.known = { holder: pid };
  }

  adminLocked(): boolean {
    return secureReadFile(this.path(ADMIN_LOCK), { log: this.log }) !== undefined;
  }

  setAdminLock(locked: boolean): void {
    if (locked) secureMakeFile(this.path(ADMIN_LOCK), 'locked\n');
    else rmSync(this.path(ADMIN_LOCK), { force: true });
  }

  /**
   * Gives write mode to `writePid` (saving every control first). Returns false if it already
   * holds it. Throws WriteLockedError naming the holder, or the admin lock.
   */
  async acquire(writePid: number, requester: number): Promise<boolean> {
    if (this.adminLocked()) {
      throw new WriteLockedError(
        `The PID ${requester} requested write access, but controls are locked by an administrator (PlatformLockControl)`,
      );
    }
    const holder = this.holder();
    if (holder === writePid) return false;
    if (holder !== undefined) {
      throw new WriteLockedError(
        `The PID ${requester} requested write access, but joulegated already has a write mode client with PID or SID of ${holder}`,
      );
    }
    const saveDir = this.path(SAVE_FILES);
    if (existsSync(saveDir)) {
      const stray = this.path(`${SAVE_FILES}-${randomUUID()}-del`);
      renameSync(saveDir, stray);
      this.log(`Warning: joulegated: found saved controls without a write lock holder; moved to ${stray}`);
    }
    const tmp = this.path(`${SAVE_FILES}-${randomUUID()}-tmp`);
    secureMakeDirs(tmp, SECURE_DIR_MODE, { log: this.log });
    try {
      await this.pio.saveControls(tmp);
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      throw err;
    }
    renameSync(tmp, saveDir);
    this.writeHolder(writePid);
    this.log(
      `joulegated: write mode taken by pid ${writePid} (requested by pid ${requester}); controls saved`,
    );
    return true;
  }

  /** Writes the saved controls back, keeping write mode (PlatformRestoreControl). */
  async restoreKeeping(): Promise<void> {
    await this.pio.restoreControls(this.path(SAVE_FILES));
  }

  /**
   * Restores the saved controls and frees write mode. A failing backend does not stop the
   * others; on any failure the save directory is kept as SAVE_FILES-<pid>-<uuid>-del.
   */
  async release(reason: string): Promise<void> {
    const holder = this.holder();
    const saveDir = this.path(SAVE_FILES);
    if (existsSync(saveDir)) {
      try {
        await this.pio.restoreControls(saveDir);
        rmSync(saveDir, { recursive: true, force: true });
        this.log(`joulegated: controls restored for pid ${holder} (${reason})`);
      } catch (err) {
        const kept = this.path(`${SAVE_FILES}-${holder}-${randomUUID()}-del`);
        renameSync(saveDir, kept);
        this.log(
          `Warning: joulegated: failed to restore controls for pid ${holder} (${reason}): ${errorMessage(err)}; saved settings kept in ${kept}`,
        );
      }
    } else {
      this.log(
        `Warning: joulegated: write mode of pid ${holder} ended (${reason}) but ${SAVE_FILES} is missing`,
      );
    }
    this.writeHolder(undefined);
  }
}
