import { errorMessage, InvalidArgumentError } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { isSameProcess, processIdentity } from '../platform/process.js';
import type { AccessSet } from './access/index.js';
import type { BatchLauncher, BatchRequestEntry, BatchServerHandle } from './batch-port.js';
import { BatchServers } from './batch-servers.js';
import type { Caller } from './caller-access.js';
import { NoSessionError } from './errors.js';
import { Mutex } from './mutex.js';
import { checkProfileName, ProfileRegistry } from './profiles.js';
import type { Log } from './secure-files.js';
import { belongsTo, newSessionRecord, recoverSessions } from './session-records.js';
import { identityOf, type SessionRecord, SessionStore } from './sessions.js';
import { shown } from './text.js';
import { WriteMode } from './write-mode.js';

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
  /** The access lists a new session gets. */
  listsOf: (process: Caller) => AccessSet;
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
  /** Sets of each session's lists, made on first use (a closed session's record is dropped). */
  private readonly allowed = new WeakMap<SessionRecord, AllowedNames>();
  private poller?: NodeJS.Timeout;

  constructor(private readonly options: SessionManagerOptions) {
    this.sessions = new SessionStore(options.runDir, options.log);
    this.writeMode = new WriteMode(options.runDir, options.pio, options.log, {
      has: (pid) => this.sessions.get(pid) !== undefined,
      watch: (process) => this.openFor(process),
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
    this.poller = setInterval(() => {
      void this.mutex.run(() => this.closeDeadSessions()).catch((err) => this.log(errorMessage(err)));
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
  }

  /** PlatformOpenSession: opens a session or adds a reference to the caller's own. */
  open(caller: Caller): Promise<void> {
    return this.mutex.run(() => this.openOrReference(caller).then(() => undefined));
  }

  /** PlatformCloseSession: drops one reference; the last one closes the session. */
  close(caller: Caller): Promise<void> {
    return this.withSession(caller, 'PlatformCloseSession', (rec) =>
      this.dropReference(rec, 'closed by client'),
    );
  }

  /** PlatformCloseSessionAdmin: closes the session of `pid` whatever its reference count. */
  closeOf(pid: number, by: Caller): Promise<void> {
    return this.mutex.run(async () => {
      if (!this.sessions.get(pid)) throw new NoSessionError(`No session is open for PID ${pid}`);
      await this.closeCompletely(pid, `closed by admin pid ${by.pid}`);
    });
  }

  /**
   * The names the caller's session may use, for calls that change no state (reads): they do
   * not wait for the lock.
   */
  async allowedFor(caller: Caller, method: string): Promise<AllowedNames> {
    const rec = this.sessions.get(caller.pid);
    if (rec && belongsTo(rec, caller)) return this.allowedOf(rec);
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

  /** PlatformStartBatch: checks the request, enters write mode if it has controls, starts the server. */
  startBatch(
    caller: Caller,
    signals: BatchRequestEntry[],
    controls: BatchRequestEntry[],
    check: RequestCheck,
  ): Promise<BatchServerHandle> {
    const writes = controls.length > 0;
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
    return reserved.then(async (slot) => {
      const handle = await this.servers.launch(slot, { runDir: this.options.runDir, signals, controls });
      this.log(`batch server ${handle.serverPid} started for pid ${caller.pid}`);
      return handle;
    });
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
  startProfile(caller: Caller, name: string): Promise<void> {
    return this.mutex.run(async () => {
      checkProfileName(name);
      const rec = await this.openOrReference(caller);
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
      this.profiles.stop(rec.profile_name, caller.pid, regions);
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

  /** In the critical section: the caller's session, closed if its pid now names another process. */
  private async liveSession(caller: Caller, method: string): Promise<SessionRecord> {
    const rec = this.sessions.get(caller.pid);
    if (!rec) {
      throw new NoSessionError(
        `Operation '${method}' not allowed without an open session. Client PID: ${caller.pid}`,
      );
    }
    if (!belongsTo(rec, caller)) {
      await this.closeCompletely(caller.pid, 'identifying properties changed');
      throw new NoSessionError(
        `Session of PID ${caller.pid} was opened by another process (start time, uid or gid differ); it has been closed`,
      );
    }
    return rec;
  }

  private allowedOf(rec: SessionRecord): AllowedNames {
    let names = this.allowed.get(rec);
    if (!names) {
      names = { signals: new Set(rec.signals), controls: new Set(rec.controls) };
      this.allowed.set(rec, names);
    }
    return names;
  }

  private async closeDeadSessions(): Promise<void> {
    for (const rec of this.sessions.all()) {
      if (!isSameProcess(identityOf(rec))) await this.closeCompletely(rec.client_pid, 'process exited');
    }
  }

  /** Opens a session for a process (the caller, or a session leader to watch). */
  private openFor(process: Caller): SessionRecord {
    const ident = processIdentity(process.pid);
    if (!ident) throw new NoSessionError(`Process ${process.pid} does not exist`);
    const rec = newSessionRecord(ident, this.options.listsOf(process));
    this.sessions.put(rec);
    this.log(`session opened for pid ${process.pid} (uid ${ident.uid})`);
    return rec;
  }

  private async openOrReference(caller: Caller): Promise<SessionRecord> {
    const rec = this.sessions.get(caller.pid);
    if (rec && belongsTo(rec, caller)) {
      rec.reference_count = (rec.reference_count ?? 1) + 1;
      this.sessions.put(rec);
      return rec;
    }
    if (rec) await this.closeCompletely(caller.pid, 'pid now belongs to another process');
    return this.openFor(caller);
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
      this.log(`session of pid ${pid} closed (${reason})`);
    }
    await this.writeMode.end(`session of pid ${pid} closed: ${reason}`, pid);
  }
}
