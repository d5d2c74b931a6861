import { readFileSync } from 'node:fs';
import type { MethodName } from '../ipc/dbus/interface.js';
import type { WireValue } from '../ipc/dbus/wire.js';
import { type DomainType, domainName, isNestedDomain, isValidDomain } from '../platform/domains.js';
import { errorMessage, InvalidArgumentError, JoulegateError, PermissionError } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import {
  hasCapSysAdmin,
  isSameProcess,
  processIdentity,
  sessionIdOf,
  startTimeSeconds,
} from '../platform/process.js';
import { describe } from '../platform/signal-info.js';
import { type AccessLists, type AccessSet, type Catalog, userById } from './access/index.js';
import type { BatchLauncher, BatchRequestEntry, BatchServerHandle } from './batch-port.js';
import { ControlLock } from './control-lock.js';
import { NoSessionError } from './errors.js';
import { checkProfileName, ProfileRegistry } from './profiles.js';
import type { Log } from './secure-files.js';
import { identityOf, type SessionRecord, SessionStore } from './sessions.js';
import { shown } from './text.js';
import { formatTopoCache } from './topo-cache.js';

/** Admin writes through the service are stored as given; see PlatformSetGroupAccess. */
const WRITE_AS_GIVEN = { force: true } as const;

/** Who is calling, as the bus daemon vouches for the sender's connection. */
export interface Caller {
  pid: number;
  uid: number;
}

/**
 * Kills a batch server left by an earlier daemon, if that pid still runs the batch server entry
 * (the check keeps a recycled pid of an unrelated process safe).
 */
function killOrphanBatchServer(pid: number): boolean {
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return false;
  }
  if (!/app\/batch-server\.[jt]s/.test(cmdline)) return false;
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

/** The admin-only pseudo group that lists the names used since the daemon started. */
export const LOG_REQUEST_GROUP = '0.LOG_REQUEST';

export interface ServiceOptions {
  runDir: string;
  pio: PlatformIO;
  access: AccessLists;
  batch?: BatchLauncher;
  log: Log;
  /** How often session owners are checked for liveness (GEOPM: 1 s). */
  pollMs?: number;
}

/** Runs async critical sections one at a time (session and write-mode state changes). */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

interface RunningBatch {
  handle: BatchServerHandle;
  hasControls: boolean;
}

type Handler = (caller: Caller, args: WireValue[]) => Promise<WireValue[]>;

/**
 * The io.github.geopm methods. Every state change (sessions, write mode, batch servers, locks)
 * runs under one mutex; reads of signals and metadata do not wait for it.
 */
export class GeopmService {
  private readonly pio: PlatformIO;
  private readonly access: AccessLists;
  private readonly log: Log;
  private readonly runDir: string;
  private readonly sessions: SessionStore;
  private readonly lock: ControlLock;
  private readonly profiles: ProfileRegistry;
  private readonly batch?: BatchLauncher;
  private readonly batches = new Map<number, RunningBatch>();
  private readonly allowed = new Map<number, { signals: Set<string>; controls: Set<string> }>();
  private readonly used = { signals: new Set<string>(), controls: new Set<string>() };
  private readonly mutex = new Mutex();
  private readonly catalog: Catalog;
  private readonly topoCache: string;
  private poller?: NodeJS.Timeout;
  private readonly pollMs: number;

  constructor(options: ServiceOptions) {
    this.pio = options.pio;
    this.access = options.access;
    this.log = options.log;
    this.runDir = options.runDir;
    this.batch = options.batch;
    this.pollMs = options.pollMs ?? 500;
    this.sessions = new SessionStore(this.runDir, this.log);
    this.lock = new ControlLock(this.runDir, this.pio, this.log);
    this.profiles = new ProfileRegistry(this.runDir, this.log);
    this.catalog = { signals: this.pio.signalNames(), controls: this.pio.controlNames() };
    this.topoCache = formatTopoCache(this.pio.topology);
  }

  /** Topology cache text (also written to the run dir by main). */
  topologyCache(): string {
    return this.topoCache;
  }

  /**
   * Reloads sessions of an earlier daemon (dropping dead and recycled pids), restores controls
   * if the write-mode holder is gone, and starts watching session owners.
   */
  async start(): Promise<void> {
    await this.mutex.run(async () => {
      for (const rec of this.sessions.load()) {
        if (rec.batch_server !== undefined) {
          // A batch server belongs to the daemon instance that started it; an orphan left by a
          // crash would go on serving (and writing) unwatched, so it is ended (GEOPM: SIGKILL).
          const killed = killOrphanBatchServer(rec.batch_server);
          this.log(
            `joulegated: session of pid ${rec.client_pid}: batch server ${rec.batch_server} ${killed ? 'killed' : 'gone'} after the restart`,
          );
          delete rec.batch_server;
          this.sessions.put(rec);
        }
        if (rec.profile_name) this.profiles.add(rec.profile_name, rec.client_pid);
        this.log(`joulegated: kept session of pid ${rec.client_pid} from an earlier run`);
      }
      const holder = this.lock.holder();
      if (holder !== undefined && !this.sessions.get(holder)) {
        await this.lock.release(`holder pid ${holder} is gone at daemon start`);
      }
    });
    this.poller = setInterval(() => {
      void this.mutex
        .run(() => this.closeDeadSessions())
        .catch((err) => this.log(`joulegated: ${errorMessage(err)}`));
    }, this.pollMs);
    this.poller.unref();
  }

  /** SIGTERM: restore the writer's controls first, then close every session. */
  async shutdown(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
    await this.mutex.run(async () => {
      const holder = this.lock.holder();
      if (holder !== undefined) await this.closeCompletely(holder, 'daemon stopping');
      for (const rec of this.sessions.all()) await this.closeCompletely(rec.client_pid, 'daemon stopping');
      if (this.lock.holder() !== undefined) await this.lock.release('daemon stopping');
    });
  }

  private async closeDeadSessions(): Promise<void> {
    for (const rec of this.sessions.all()) {
      if (!isSameProcess(identityOf(rec))) await this.closeCompletely(rec.client_pid, 'process exited');
    }
  }

  private isAdmin(caller: Caller): boolean {
    return hasCapSysAdmin(caller.pid);
  }

  private requireAdmin(caller: Caller, method: string): void {
    if (!this.isAdmin(caller)) {
      throw new PermissionError(
        `Calling "io.github.geopm.${method}" failed, try with sudo or as "root" user (requires CAP_SYS_ADMIN)`,
      );
    }
  }

  /** Lists of a process: everything for an admin, else the default and its user's groups. */
  private accessOf({ pid, uid }: Caller): AccessSet {
    if (hasCapSysAdmin(pid)) return this.access.getAllAccess(this.catalog);
    const user = userById(uid);
    // A uid NSS does not know has no groups: it gets the default lists only.
    if (user === undefined) return this.access.getGroupAccess('', this.catalog);
    return this.access.getUserAccess(user.name, this.catalog);
  }

  /** Drops one reference to a session; the last one closes it. */
  private async dropReference(rec: SessionRecord, reason: string): Promise<void> {
    rec.reference_count = (rec.reference_count ?? 1) - 1;
    if (rec.reference_count <= 0) await this.closeCompletely(rec.client_pid, reason);
    else this.sessions.put(rec);
  }

  /** The caller's session, checked to still belong to the same process. */
  private async requireSession(caller: Caller, method: string): Promise<SessionRecord> {
    const rec = this.sessions.get(caller.pid);
    if (!rec) {
      throw new NoSessionError(
        `Operation '${method}' not allowed without an open session. Client PID: ${caller.pid}`,
      );
    }
    if (rec.client_uid !== caller.uid || !isSameProcess(identityOf(rec))) {
      await this.mutex.run(() => this.closeCompletely(caller.pid, 'identifying properties changed'));
      throw new NoSessionError(
        `Session of PID ${caller.pid} was opened by another process (start time, uid or gid differ); it has been closed`,
      );
    }
    return rec;
  }

  private allowedOf(rec: SessionRecord): { signals: Set<string>; controls: Set<string> } {
    let sets = this.allowed.get(rec.client_pid);
    if (!sets) {
      sets = { signals: new Set(rec.signals), controls: new Set(rec.controls) };
      this.allowed.set(rec.client_pid, sets);
    }
    return sets;
  }

  private openFor(pid: number, lists: AccessSet): SessionRecord {
    const ident = processIdentity(pid);
    if (!ident) throw new NoSessionError(`Process ${pid} does not exist`);
    const rec: SessionRecord = {
      client_pid: pid,
      client_uid: ident.uid,
      client_gid: ident.gid,
      create_time: startTimeSeconds(ident.startTicks),
      start_ticks: ident.startTicks,
      signals: lists.signals,
      controls: lists.controls,
      reference_count: 1,
    };
    this.sessions.put(rec);
    this.log(`joulegated: session opened for pid ${pid} (uid ${ident.uid})`);
    return rec;
  }

  private async openSession(caller: Caller): Promise<void> {
    const rec = this.sessions.get(caller.pid);
    if (rec && rec.client_uid === caller.uid && isSameProcess(identityOf(rec))) {
      rec.reference_count = (rec.reference_count ?? 1) + 1;
      this.sessions.put(rec);
      return;
    }
    if (rec) await this.closeCompletely(caller.pid, 'pid now belongs to another process');
    this.openFor(caller.pid, this.accessOf(caller));
  }

  /** Stops the batch server, restores controls if this pid holds write mode, forgets the session. */
  private async closeCompletely(pid: number, reason: string): Promise<void> {
    const running = this.batches.get(pid);
    if (running) {
      this.batches.delete(pid);
      await running.handle
        .stop()
        .catch((err) => this.log(`joulegated: stopping batch server of pid ${pid}: ${errorMessage(err)}`));
    }
    const rec = this.sessions.get(pid);
    if (rec?.profile_name) this.profiles.forget(pid, rec.profile_name);
    this.allowed.delete(pid);
    if (rec) {
      this.sessions.remove(pid);
      this.log(`joulegated: session of pid ${pid} closed (${reason})`);
    }
    if (this.lock.holder() === pid) await this.lock.release(`session of pid ${pid} closed: ${reason}`);
  }

  /**
   * Write mode belongs to the caller's session leader while that process lives (a tool run from
   * a shell keeps its settings until the shell exits), else to the caller.
   */
  private async enterWriteMode(caller: Caller): Promise<void> {
    const sid = sessionIdOf(caller.pid);
    const leader = sid !== undefined && sid !== caller.pid ? processIdentity(sid) : undefined;
    const writePid = leader ? leader.pid : caller.pid;
    const taken = await this.lock.acquire(writePid, caller.pid);
    if (taken && leader && !this.sessions.get(leader.pid)) {
      // Watch the leader like a client so its exit ends write mode.
      this.openFor(leader.pid, this.accessOf(leader));
    }
  }

  /** Checks name, domain and index of a request before anything is started or written. */
  private checkRequest(kind: 'signal' | 'control', name: string, domain: number, idx: number): void {
    const valid = kind === 'signal' ? this.pio.isValidSignal(name) : this.pio.isValidControl(name);
    if (!valid) throw new InvalidArgumentError(`no support for ${kind} ${shown(name)}`);
    if (!isValidDomain(domain))
      throw new InvalidArgumentError(`invalid domain type ${domain} for ${shown(name)}`);
    this.pio.topology.checkIndex(domain, idx);
    const info = kind === 'signal' ? this.pio.signalInfo(name) : this.pio.controlInfo(name);
    if (!isNestedDomain(info.domain, domain)) {
      throw new InvalidArgumentError(
        `${shown(name)}: native domain ${domainName(info.domain)} is not within ${domainName(domain as DomainType)}`,
      );
    }
  }

  private checkAllowed(
    kind: 'signals' | 'controls',
    names: readonly string[],
    allowed: Set<string>,
    pid: number,
  ): void {
    const missing = [...new Set(names.filter((n) => !allowed.has(n)))];
    if (missing.length > 0) {
      throw new PermissionError(
        `Requested ${kind} that are not in the access list of PID ${pid}: ${missing.slice(0, 10).map(shown).join(', ')}${missing.length > 10 ? ', …' : ''}`,
      );
    }
  }

  /** Method table: one entry per io.github.geopm method. */
  readonly handlers: Record<MethodName, Handler> = {
    TopoGetCache: async () => [this.topoCache],

    PlatformGetGroupAccess: async (caller, [group]) => {
      if (group === LOG_REQUEST_GROUP) {
        this.requireAdmin(caller, 'PlatformGetGroupAccess');
        return [[[...this.used.signals].sort(), [...this.used.controls].sort()]];
      }
      const set = this.access.getGroupAccess(group as string, this.catalog);
      return [[set.signals, set.controls]];
    },
    PlatformSetGroupAccess: async (caller, [group, signals, controls]) => {
      this.requireAdmin(caller, 'PlatformSetGroupAccess');
      // As in GEOPM the service stores what the admin gives (lists may be shared by nodes with
      // other hardware; unknown names are filtered when read). `joulegate access` validates
      // names client-side unless -F is given.
      this.access.setGroupAccess(
        group as string,
        signals as string[],
        controls as string[],
        this.catalog,
        WRITE_AS_GIVEN,
      );
      return [];
    },
    PlatformSetGroupAccessSignals: async (caller, [group, signals]) => {
      this.requireAdmin(caller, 'PlatformSetGroupAccessSignals');
      this.access.setGroupAccess(
        group as string,
        signals as string[],
        undefined,
        this.catalog,
        WRITE_AS_GIVEN,
      );
      return [];
    },
    PlatformSetGroupAccessControls: async (caller, [group, controls]) => {
      this.requireAdmin(caller, 'PlatformSetGroupAccessControls');
      this.access.setGroupAccess(
        group as string,
        undefined,
        controls as string[],
        this.catalog,
        WRITE_AS_GIVEN,
      );
      return [];
    },
    PlatformGetUserAccess: async (caller) => {
      const set = this.accessOf(caller);
      return [[set.signals, set.controls]];
    },
    PlatformGetAllAccess: async () => {
      const set = this.access.getAllAccess(this.catalog);
      return [[set.signals, set.controls]];
    },
    PlatformGetSignalInfo: async (_caller, [names]) => [
      (names as string[]).map((name) => {
        if (!this.pio.isValidSignal(name))
          throw new InvalidArgumentError(`no support for signal ${shown(name)}`);
        const i = this.pio.signalInfo(name);
        return [name, describe(i), i.domain, i.aggregation, i.format, i.behavior];
      }),
    ],
    PlatformGetControlInfo: async (_caller, [names]) => [
      (names as string[]).map((name) => {
        if (!this.pio.isValidControl(name))
          throw new InvalidArgumentError(`no support for control ${shown(name)}`);
        const i = this.pio.controlInfo(name);
        return [name, describe(i), i.domain];
      }),
    ],

    PlatformLockControl: (caller) =>
      this.mutex.run(async () => {
        this.requireAdmin(caller, 'PlatformLockControl');
        this.lock.setAdminLock(true);
        // The lock also ends the current write mode: stop control batch servers, restore.
        for (const [pid, b] of this.batches) {
          if (!b.hasControls) continue;
          this.batches.delete(pid);
          await b.handle.stop();
          const rec = this.sessions.get(pid);
          if (rec) {
            delete rec.batch_server;
            this.sessions.put(rec);
          }
        }
        if (this.lock.holder() !== undefined) await this.lock.release('controls locked by an administrator');
        this.log(`joulegated: controls locked by pid ${caller.pid}`);
        return [];
      }),
    PlatformUnlockControl: (caller) =>
      this.mutex.run(async () => {
        this.requireAdmin(caller, 'PlatformUnlockControl');
        this.lock.setAdminLock(false);
        this.log(`joulegated: controls unlocked by pid ${caller.pid}`);
        return [];
      }),

    PlatformOpenSession: (caller) =>
      this.mutex.run(async () => {
        await this.openSession(caller);
        return [];
      }),
    PlatformCloseSession: async (caller) => {
      const rec = await this.requireSession(caller, 'PlatformCloseSession');
      return this.mutex.run(async () => {
        if (this.sessions.get(caller.pid) === rec) await this.dropReference(rec, 'closed by client');
        return [];
      });
    },
    PlatformCloseSessionAdmin: (caller, [pid]) =>
      this.mutex.run(async () => {
        if (pid !== caller.pid) this.requireAdmin(caller, 'PlatformCloseSessionAdmin');
        if (!this.sessions.get(pid as number)) throw new NoSessionError(`No session is open for PID ${pid}`);
        await this.closeCompletely(pid as number, `closed by admin pid ${caller.pid}`);
        return [];
      }),

    PlatformStartBatch: async (caller, [signalConfig, controlConfig]) => {
      const rec = await this.requireSession(caller, 'PlatformStartBatch');
      const toEntries = (cfg: WireValue) =>
        (cfg as [number, number, string][]).map(
          ([domain, idx, name]): BatchRequestEntry => ({ name, domain, idx }),
        );
      const signals = toEntries(signalConfig!);
      const controls = toEntries(controlConfig!);
      if (signals.length === 0 && controls.length === 0) {
        throw new InvalidArgumentError('Requested a batch server, but no signals or controls were specified');
      }
      const allowed = this.allowedOf(rec);
      this.checkAllowed(
        'signals',
        signals.map((s) => s.name),
        allowed.signals,
        caller.pid,
      );
      this.checkAllowed(
        'controls',
        controls.map((c) => c.name),
        allowed.controls,
        caller.pid,
      );
      for (const s of signals) this.checkRequest('signal', s.name, s.domain, s.idx);
      for (const c of controls) this.checkRequest('control', c.name, c.domain, c.idx);
      return this.mutex.run(async () => {
        const running = this.batches.get(caller.pid);
        if (running) {
          throw new JoulegateError(
            `Client ${caller.pid} has already started a batch server: ${running.handle.serverPid}`,
          );
        }
        if (!this.batch) throw new JoulegateError('batch servers are not available in this joulegated');
        if (controls.length > 0) await this.enterWriteMode(caller);
        const handle = await this.batch.start({
          runDir: this.runDir,
          clientPid: caller.pid,
          clientUid: rec.client_uid,
          clientGid: rec.client_gid,
          signals,
          controls,
        });
        for (const s of signals) this.used.signals.add(s.name);
        for (const c of controls) this.used.controls.add(c.name);
        this.batches.set(caller.pid, { handle, hasControls: controls.length > 0 });
        rec.batch_server = handle.serverPid;
        this.sessions.put(rec);
        void handle.exited.then(() => this.forgetBatch(caller.pid, handle));
        this.log(`joulegated: batch server ${handle.serverPid} started for pid ${caller.pid}`);
        return [[handle.serverPid, handle.serverKey]];
      });
    },
    PlatformStopBatch: async (caller, [serverPid]) => {
      const rec = await this.requireSession(caller, 'PlatformStopBatch');
      return this.mutex.run(async () => {
        const running = this.batches.get(caller.pid);
        if (!running || rec.batch_server !== serverPid) {
          throw new InvalidArgumentError(`PID ${serverPid} is not the batch server of client ${caller.pid}`);
        }
        this.batches.delete(caller.pid);
        await running.handle.stop();
        this.forgetBatch(caller.pid, running.handle);
        return [];
      });
    },

    PlatformReadSignal: async (caller, [name, domain, idx]) => {
      const rec = await this.requireSession(caller, 'PlatformReadSignal');
      const n = name as string;
      if (!this.allowedOf(rec).signals.has(n)) {
        throw new PermissionError(`Signal ${shown(n)} is not in the access list of PID ${caller.pid}`);
      }
      this.checkRequest('signal', n, domain as number, idx as number);
      this.used.signals.add(n);
      return [await this.pio.readSignal(n, domain as DomainType, idx as number)];
    },
    PlatformWriteControl: async (caller, [name, domain, idx, setting]) => {
      const rec = await this.requireSession(caller, 'PlatformWriteControl');
      const n = name as string;
      if (!this.allowedOf(rec).controls.has(n)) {
        throw new PermissionError(`Control ${shown(n)} is not in the access list of PID ${caller.pid}`);
      }
      this.checkRequest('control', n, domain as number, idx as number);
      if (!Number.isFinite(setting))
        throw new InvalidArgumentError(`invalid setting ${setting} for control ${shown(n)}`);
      return this.mutex.run(async () => {
        await this.enterWriteMode(caller);
        this.used.controls.add(n);
        await this.pio.writeControl(n, domain as DomainType, idx as number, setting as number);
        return [];
      });
    },
    PlatformRestoreControl: async (caller) => {
      await this.requireSession(caller, 'PlatformRestoreControl');
      return this.mutex.run(async () => {
        await this.enterWriteMode(caller);
        await this.lock.restoreKeeping();
        return [];
      });
    },

    PlatformStartProfile: (caller, [name]) =>
      this.mutex.run(async () => {
        checkProfileName(name as string);
        await this.openSession(caller);
        const rec = this.sessions.get(caller.pid)!;
        if (rec.profile_name !== undefined && rec.profile_name !== name) {
          throw new InvalidArgumentError(
            `PID ${caller.pid} is already profiled as "${shown(rec.profile_name)}"`,
          );
        }
        rec.profile_name = name as string;
        this.sessions.put(rec);
        this.profiles.add(name as string, caller.pid);
        return [];
      }),
    PlatformStopProfile: async (caller, [regions]) => {
      const rec = await this.requireSession(caller, 'PlatformStopProfile');
      return this.mutex.run(async () => {
        if (rec.profile_name === undefined)
          throw new InvalidArgumentError(`PID ${caller.pid} has no profile started`);
        this.profiles.stop(rec.profile_name, caller.pid, regions as string[]);
        delete rec.profile_name;
        await this.dropReference(rec, 'profile stopped');
        return [];
      });
    },
    PlatformGetProfilePids: (caller, [name]) =>
      this.mutex.run(async () => {
        this.requireAdmin(caller, 'PlatformGetProfilePids');
        return [this.profiles.pidsOf(name as string, caller.pid)];
      }),
    PlatformPopProfileRegionNames: (caller, [name]) =>
      this.mutex.run(async () => {
        this.requireAdmin(caller, 'PlatformPopProfileRegionNames');
        return [this.profiles.popRegions(name as string, caller.pid)];
      }),
  };

  private forgetBatch(pid: number, handle: BatchServerHandle): void {
    if (this.batches.get(pid)?.handle === handle) this.batches.delete(pid);
    const rec = this.sessions.get(pid);
    if (rec && rec.batch_server === handle.serverPid) {
      delete rec.batch_server;
      this.sessions.put(rec);
    }
  }
}
