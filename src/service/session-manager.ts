import { errorMessage, InvalidArgumentError, JoulegateError, PermissionError } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import type { AccessSet } from './access/index.js';
import type { BatchLauncher, BatchRequestEntry, BatchServerHandle } from './batch-port.js';
import { BatchServers } from './batch-servers.js';
import { DEFAULT_BATCH_SETTINGS } from './batch-settings.js';
import { type Caller, callerProcessNow, unseenCallerText } from './caller-access.js';
import { NoSessionError } from './errors.js';
import { LIMITS } from './limits.js';
import { Mutex } from './mutex.js';
import { checkProfileName, ProfileRegistry } from './profiles.js';
import type { Log } from './secure-files.js';
import { SessionProcesses } from './session-processes.js';
import { belongsTo, newSessionRecord, recoverSessions } from './session-records.js';
import { identityOf, type SessionRecord, SessionStore } from './sessions.js';
import { shown } from './text.js';
import { WriteMode } from './write-mode.js';

/** Rejects with the signal's reason once it aborts (never settles otherwise). */
function rejectedOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** Sessions checked by the liveness poll between two turns of the event loop. */
const POLL_BATCH = 32;

/** The names a session may read and write: its access lists as they were when it opened. */
export interface AllowedNames {
  signals: ReadonlySet<string>;
  controls: ReadonlySet<string>;
}

/** Validates a request against the caller's allowed names; throws to refuse it. */
export type RequestCheck<Checked = void> = (allowed: AllowedNames) => Checked;

export interface SessionManagerOptions {
  runDir: string;
  pio: PlatformIO;
  log: Log;
  batch?: BatchLauncher;
  /** The access lists a new session gets (may wait on NSS, off the event loop). */
  listsOf: (process: Caller) => Promise<AccessSet>;
  /** How often session owners are checked for liveness (GEOPM: 1 s). */
  pollMs: number;
}

/**
 * Client sessions and the single write mode. Sessions are reference counted, pinned to one
 * process (pid, uid, gid, start time), watched for exit and kept across daemon restarts. Write
 * mode, batch servers and profiles hang off sessions. Every change of that state is decided in
 * one critical section (one mutex) that also checks the caller's session, so write mode only
 * goes to a process whose session is live and watched.
 */
export class SessionManager {
  private readonly mutex = new Mutex();
  private readonly sessions: SessionStore;
  private readonly writeMode: WriteMode;
  private readonly profiles: ProfileRegistry;
  private readonly servers: BatchServers;
  /** Handles on the sessions' processes: the read path's liveness check is one poll. */
  private readonly processes = new SessionProcesses();
  /** Sets of each session's lists, made on first use (a closed session's record is dropped). */
  private readonly allowed = new WeakMap<SessionRecord, AllowedNames>();
  private poller?: NodeJS.Timeout;

  constructor(private readonly options: SessionManagerOptions) {
    this.sessions = new SessionStore(options.runDir, options.log);
    this.writeMode = new WriteMode(options.runDir, options.pio, options.log, {
      has: (pid) => this.sessions.get(pid) !== undefined,
      watch: async (process) => {
        await this.openFor(process);
      },
    });
    this.profiles = new ProfileRegistry(options.runDir, options.log);
    this.servers = new BatchServers(options.batch, this.sessions, this.mutex);
  }

  private log(line: string): void {
    this.options.log(`joulegated: ${line}`);
  }

  /**
   * Reloads sessions of an earlier daemon (dropping dead and recycled pids), restores controls
   * if the write-mode holder is gone, and starts watching session owners.
   */
  async start(): Promise<void> {
    await this.mutex.run(async () => {
      recoverSessions(this.sessions, this.profiles, this.options.log);
      await this.writeMode.recover();
    });
    let polling = false;
    this.poller = setInterval(() => {
      if (polling) return;
      polling = true;
      this.closeDeadSessions()
        .catch((err) => this.log(errorMessage(err)))
        .finally(() => {
          polling = false;
        });
    }, this.options.pollMs);
    this.poller.unref();
  }

  /** SIGTERM: restore the writer's controls first, then close every session. */
  async shutdown(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
    await this.mutex.run(async () => {
      const holder = this.writeMode.holder();
      if (holder !== undefined) await this.closeCompletely(holder, 'daemon stopping');
      for (const rec of this.sessions.all()) await this.closeCompletely(rec.client_pid, 'daemon stopping');
      await this.writeMode.end('daemon stopping');
    });
    await this.sessions.flushed();
  }

  /** PlatformOpenSession: opens a session or adds a reference to the caller's own. */
  async open(caller: Caller): Promise<void> {
    const lists = await this.listsForNewSession(caller);
    await this.mutex.run(() => this.openOrReference(caller, lists));
  }

  /** PlatformCloseSession: drops one reference; the last one closes the session. */
  close(caller: Caller): Promise<void> {
    return this.withSession(caller, 'PlatformCloseSession', (rec) =>
      this.dropReference(rec, 'closed by client'),
    );
  }

  /**
   * PlatformCloseSessionAdmin: closes the session of `pid` whatever its reference count.
   * `authorize` runs first, told whether the session is the caller's own; it throws to refuse.
   */
  closeOf(pid: number, by: Caller, authorize: (own: boolean) => void): Promise<void> {
    return this.mutex.run(async () => {
      const rec = this.sessions.get(pid);
      // A session under the caller's pid that is not its own (the pid was reused) is another's.
      authorize(pid === by.pid && (rec === undefined || belongsTo(rec, by)));
      if (!rec) throw new NoSessionError(`No session is open for PID ${pid}`);
      await this.closeCompletely(pid, `closed by pid ${by.pid}`);
    });
  }

  /**
   * The names the caller's session may use, for calls that change no state (reads): they do
   * not wait for the lock. The session's process must still run (a poll of its pidfd, shared
   * with the other calls of this turn): a child that inherited the connection reads nothing
   * once its parent, the session's owner, has exited, without waiting for the liveness poll.
   */
  async allowedFor(caller: Caller, method: string): Promise<AllowedNames> {
    const rec = this.sessions.get(caller.pid);
    if (rec && belongsTo(rec, caller)) {
      const running = await this.processes.runningSoon(rec.client_pid, rec.start_ticks);
      // Still that session after the wait: one closed meanwhile is judged under the lock.
      if (running && this.sessions.get(caller.pid) === rec) return this.allowedOf(rec);
    }
    return this.mutex.run(async () => this.allowedOf(await this.liveSession(caller, method)));
  }

  /** Checks the request, enters write mode for the caller, then writes what the check passed. */
  asWriter<Checked, T>(
    caller: Caller,
    method: string,
    check: RequestCheck<Checked>,
    write: (checked: Checked) => Promise<T>,
  ): Promise<T> {
    return this.withSession(caller, method, async (rec) => {
      const checked = check(this.allowedOf(rec));
      await this.writeMode.enter(caller);
      return write(checked);
    });
  }

  /** PlatformRestoreControl: writes the saved controls back, staying in write mode. */
  restoreSaved(caller: Caller): Promise<void> {
    return this.asWriter(
      caller,
      'PlatformRestoreControl',
      () => {},
      () => this.writeMode.restoreKeeping(),
    );
  }

  /**
   * PlatformStartBatch: checks the request, enters write mode if it has controls, starts the
   * server once its turn comes. Answers by the start deadline at the latest, and earlier if the
   * caller's connection leaves (`callerGone`): a start given up so ends its server (once up).
   */
  startBatch(
    caller: Caller,
    signals: BatchRequestEntry[],
    controls: BatchRequestEntry[],
    check: RequestCheck,
    callerGone?: AbortSignal,
  ): Promise<BatchServerHandle> {
    const writes = controls.length > 0;
    // The deadline counts from the call's arrival: its wait for the lock is the client's wait too.
    const deadline = this.startDeadline(caller.pid);
    const giveUp = callerGone ? AbortSignal.any([callerGone, deadline.signal]) : deadline.signal;
    const reserved = this.withSession(caller, 'PlatformStartBatch', async (rec) => {
      check(this.allowedOf(rec));
      const slot = this.servers.reserve(rec, writes);
      try {
        if (writes) await this.writeMode.enter(caller);
      } catch (err) {
        this.servers.release(slot);
        throw err;
      }
      return slot;
    });
    // The process starts outside the lock: other clients' calls go on meanwhile.
    const started = reserved.then(async (slot) => {
      let replied = () => {};
      const answered = new Promise<void>((resolve) => {
        replied = resolve;
      });
      try {
        const request = { runDir: this.options.runDir, signals, controls };
        // The reply does not wait for the session record that names the server; the server's
        // client does (BatchServers.launch admits it once the record is written).
        const launched = this.servers.launch(slot, request, giveUp, answered);
        const handle = await Promise.race([launched, rejectedOnAbort(giveUp)]);
        this.log(`batch server ${handle.serverPid} started for pid ${caller.pid}`);
        return handle;
      } catch (err) {
        if (giveUp.aborted)
          this.log(`batch server start for pid ${caller.pid} given up: ${errorMessage(err)}`);
        throw err;
      } finally {
        // The dispatcher writes the reply in the microtasks that follow; this runs after them.
        setImmediate(replied);
      }
    });
    return started.finally(() => clearTimeout(deadline.timer));
  }

  /** Aborts once a start of `pid` has taken JOULEGATE_BATCH_START_TIMEOUT. */
  private startDeadline(pid: number): { signal: AbortSignal; timer: NodeJS.Timeout } {
    const ms = this.options.batch?.limits.startTimeoutMs ?? DEFAULT_BATCH_SETTINGS.startTimeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => {
      controller.abort(
        new JoulegateError(
          `the batch server of PID ${pid} could not start within ${ms / 1000} s (JOULEGATE_BATCH_START_TIMEOUT; the node is busy starting others): try again`,
        ),
      );
    }, ms);
    return { signal: controller.signal, timer };
  }

  /** PlatformStopBatch: stops the caller's batch server. */
  stopBatch(caller: Caller, serverPid: number): Promise<void> {
    return this.withSession(caller, 'PlatformStopBatch', async () => {
      if (this.servers.serverOf(caller.pid) !== serverPid) {
        throw new InvalidArgumentError(`PID ${serverPid} is not the batch server of client ${caller.pid}`);
      }
      await this.servers.stop(caller.pid);
    });
  }

  /** PlatformLockControl: no write mode until unlocked; the current one ends now. */
  lockControls(by: Caller): Promise<void> {
    return this.mutex.run(async () => {
      this.writeMode.setAdminLock(true);
      await this.servers.stopWriters();
      await this.writeMode.end('controls locked by an administrator');
      this.log(`controls locked by pid ${by.pid}`);
    });
  }

  /** PlatformUnlockControl. */
  unlockControls(by: Caller): Promise<void> {
    return this.mutex.run(async () => {
      this.writeMode.setAdminLock(false);
      this.log(`controls unlocked by pid ${by.pid}`);
    });
  }

  /** PlatformStartProfile: registers the caller (with a session reference) under `name`. */
  async startProfile(caller: Caller, name: string): Promise<void> {
    checkProfileName(name);
    const lists = await this.listsForNewSession(caller);
    return this.mutex.run(async () => {
      const rec = await this.openOrReference(caller, lists);
      if (rec.profile_name !== undefined && rec.profile_name !== name) {
        throw new InvalidArgumentError(
          `PID ${caller.pid} is already profiled as "${shown(rec.profile_name)}"`,
        );
      }
      rec.profile_name = name;
      this.sessions.put(rec);
      this.profiles.add(name, caller.pid);
    });
  }

  /** PlatformStopProfile: records the caller's regions and drops its profile's reference. */
  stopProfile(caller: Caller, regions: readonly string[]): Promise<void> {
    return this.withSession(caller, 'PlatformStopProfile', async (rec) => {
      if (rec.profile_name === undefined)
        throw new InvalidArgumentError(`PID ${caller.pid} has no profile started`);
      this.profiles.stop(rec.profile_name, caller.pid, caller.uid, regions);
      delete rec.profile_name;
      await this.dropReference(rec, 'profile stopped');
    });
  }

  /** PlatformGetProfilePids (takes PROFILER_LOCK for the caller). */
  profilePids(name: string, caller: Caller): Promise<number[]> {
    return this.mutex.run(async () => this.profiles.pidsOf(name, caller.pid));
  }

  /** PlatformPopProfileRegionNames (the caller must hold PROFILER_LOCK). */
  popProfileRegions(name: string, caller: Caller): Promise<string[]> {
    return this.mutex.run(async () => this.profiles.popRegions(name, caller.pid));
  }

  /** Runs `fn` in the critical section with the caller's live session. */
  private withSession<T>(caller: Caller, method: string, fn: (rec: SessionRecord) => Promise<T>): Promise<T> {
    return this.mutex.run(async () => fn(await this.liveSession(caller, method)));
  }

  /**
   * In the critical section: the caller's session, and its process still running (checked
   * here, not only by the poller, so no state change is made for a process that is gone).
   */
  private async liveSession(caller: Caller, method: string): Promise<SessionRecord> {
    const rec = this.sessions.get(caller.pid);
    if (!rec) {
      throw new NoSessionError(
        `Operation '${method}' not allowed without an open session. Client PID: ${caller.pid}`,
      );
    }
    const running = this.processes.isSame(identityOf(rec));
    if (running && belongsTo(rec, caller)) return rec;
    if (!running) {
      await this.closeCompletely(caller.pid, 'process exited or pid reused');
      throw new NoSessionError(`Session of PID ${caller.pid} was closed: its process has exited`);
    }
    // The session's process lives on: the caller is a connection whose own process is gone.
    throw new NoSessionError(
      `Session of PID ${caller.pid} belongs to another process than the one that opened this connection`,
    );
  }

  /** Lists for a session the caller does not have yet, looked up before the lock is taken. */
  private async listsForNewSession(caller: Caller): Promise<AccessSet | undefined> {
    const rec = this.sessions.get(caller.pid);
    return rec && belongsTo(rec, caller) ? undefined : this.options.listsOf(caller);
  }

  private allowedOf(rec: SessionRecord): AllowedNames {
    let names = this.allowed.get(rec);
    if (!names) {
      names = { signals: new Set(rec.signals), controls: new Set(rec.controls) };
      this.allowed.set(rec, names);
    }
    return names;
  }

  /**
   * The liveness poll. Owners are looked up in /proc outside the lock (a few milliseconds for
   * hundreds of sessions, which no other client should wait for); only sessions found dead take
   * the lock, and are checked again inside it.
   */
  private async closeDeadSessions(): Promise<void> {
    const dead: SessionRecord[] = [];
    const all = this.sessions.all();
    for (let i = 0; i < all.length; i++) {
      // A /proc read and a poll a session: calls waiting meanwhile go first every few dozen sessions.
      if (i > 0 && i % POLL_BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
      if (!this.processes.isSame(identityOf(all[i]!))) dead.push(all[i]!);
    }
    if (dead.length === 0) return;
    await this.mutex.run(async () => {
      for (const rec of dead) {
        if (this.sessions.get(rec.client_pid) === rec && !this.processes.isSame(identityOf(rec)))
          await this.closeCompletely(rec.client_pid, 'process exited');
      }
    });
  }

  /**
   * Opens a session for a process (the caller, or a session leader to watch), if the pid still
   * names that process (same start time and uid) and its user is under the session cap.
   */
  private async openFor(process: Caller, lists?: AccessSet): Promise<SessionRecord> {
    const ident = callerProcessNow(process);
    if (!ident) throw new NoSessionError(unseenCallerText(process.pid));
    const ofUser = this.sessions.all().filter((r) => r.client_uid === ident.uid).length;
    if (ofUser >= LIMITS.sessionsPerUser) {
      throw new PermissionError(
        `uid ${ident.uid} already has ${ofUser} sessions open, the cap per user (${LIMITS.sessionsPerUser})`,
      );
    }
    const rec = newSessionRecord(ident, lists ?? (await this.options.listsOf(process)));
    this.sessions.put(rec);
    // The caller's handle has pinned the process already: the session's is a copy of it.
    if (process.handle) this.processes.adopt(process.handle);
    this.log(`session opened for pid ${process.pid} (uid ${ident.uid})`);
    return rec;
  }

  private async openOrReference(caller: Caller, lists: AccessSet | undefined): Promise<SessionRecord> {
    const rec = this.sessions.get(caller.pid);
    // Only for the live owner: a connection whose process has exited (a child holds it now)
    // must not keep the session alive with new references.
    const running = rec !== undefined && this.processes.isSame(identityOf(rec));
    if (rec && running && belongsTo(rec, caller)) {
      rec.reference_count = (rec.reference_count ?? 1) + 1;
      this.sessions.put(rec);
      return rec;
    }
    if (rec) {
      if (running) {
        throw new NoSessionError(
          `PID ${caller.pid} now names another process than the one that opened this connection`,
        );
      }
      await this.closeCompletely(caller.pid, 'process exited or pid reused');
    }
    return this.openFor(caller, lists);
  }

  private async dropReference(rec: SessionRecord, reason: string): Promise<void> {
    rec.reference_count = (rec.reference_count ?? 1) - 1;
    if (rec.reference_count <= 0) await this.closeCompletely(rec.client_pid, reason);
    else this.sessions.put(rec);
  }

  /** Stops the batch server, restores controls if this pid holds write mode, forgets the session. */
  private async closeCompletely(pid: number, reason: string): Promise<void> {
    await this.servers
      .stop(pid)
      .catch((err) => this.log(`stopping batch server of pid ${pid}: ${errorMessage(err)}`));
    const rec = this.sessions.get(pid);
    if (rec?.profile_name) this.profiles.forget(pid, rec.profile_name);
    if (rec) {
      this.sessions.remove(pid);
      this.processes.forget(pid);
      this.log(`session of pid ${pid} closed (${reason})`);
    }
    await this.writeMode.end(`session of pid ${pid} closed: ${reason}`, pid);
  }
}
