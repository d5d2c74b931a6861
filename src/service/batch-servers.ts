import { InvalidArgumentError, JoulegateError } from '../platform/errors.js';
import type { BatchLauncher, BatchServerHandle, BatchStartRequest } from './batch-port.js';
import { NoSessionError } from './errors.js';
import type { Mutex } from './mutex.js';
import type { SessionRecord, SessionStore } from './sessions.js';

/** A client's batch server: reserved while it starts (outside the lock), then running. */
export interface BatchSlot {
  readonly rec: SessionRecord;
  readonly hasControls: boolean;
  handle?: BatchServerHandle;
  /** The session ended (or controls were locked) while the server was starting. */
  cancelled: boolean;
}

/**
 * The batch servers, at most one per client session, mirrored in the session record
 * (`batch_server`). A start is decided in two short steps inside the session manager's lock —
 * reserve (checks, limits), then record — with the slow process start between them outside the
 * lock, so other clients are not kept waiting. A slot stopped while its server starts is
 * cancelled: the server is stopped once started, before it ever admits its client.
 */
export class BatchServers {
  private readonly slots = new Map<number, BatchSlot>();

  constructor(
    private readonly launcher: BatchLauncher | undefined,
    private readonly sessions: SessionStore,
    private readonly lock: Mutex,
  ) {}

  /** Server pid of `clientPid`'s running batch server. */
  serverOf(clientPid: number): number | undefined {
    return this.slots.get(clientPid)?.handle?.serverPid;
  }

  /**
   * In the lock: reserves the server of session `rec`. Throws if it has one (or one starting),
   * if there is no launcher, or if the per-user or total limit is reached.
   */
  reserve(rec: SessionRecord, hasControls: boolean): BatchSlot {
    const clientPid = rec.client_pid;
    const existing = this.slots.get(clientPid);
    if (existing) {
      const pid = existing.handle?.serverPid;
      throw new JoulegateError(
        pid === undefined
          ? `Client ${clientPid} is already starting a batch server`
          : `Client ${clientPid} has already started a batch server: ${pid}`,
      );
    }
    if (!this.launcher) throw new JoulegateError('batch servers are not available in this joulegated');
    const { perUser, total } = this.launcher.limits;
    if (this.slots.size >= total) {
      throw new InvalidArgumentError(
        `Batch server limit reached: ${this.slots.size} servers run on this node (limit ${total}, JOULEGATE_BATCH_MAX_SERVERS)`,
      );
    }
    const uid = rec.client_uid;
    let ofUser = 0;
    for (const slot of this.slots.values()) if (slot.rec.client_uid === uid) ofUser++;
    if (ofUser >= perUser) {
      throw new InvalidArgumentError(
        `Batch server limit reached: uid ${uid} has ${ofUser} batch servers (limit ${perUser}, JOULEGATE_BATCH_MAX_PER_USER)`,
      );
    }
    const slot: BatchSlot = { rec, hasControls, cancelled: false };
    this.slots.set(clientPid, slot);
    return slot;
  }

  /** In the lock: gives a reservation back (the start was refused after reserve()). */
  release(slot: BatchSlot): void {
    if (this.slots.get(slot.rec.client_pid) === slot) this.slots.delete(slot.rec.client_pid);
  }

  /**
   * Outside the lock: starts the reserved server, then records it in the lock and lets its
   * client connect, unless the slot was cancelled or the session ended meanwhile.
   */
  async launch(
    slot: BatchSlot,
    request: Pick<BatchStartRequest, 'runDir' | 'signals' | 'controls'>,
    answered?: Promise<void>,
  ): Promise<BatchServerHandle> {
    const { rec } = slot;
    const clientPid = rec.client_pid;
    let handle: BatchServerHandle;
    try {
      handle = await this.launcher!.start(
        { ...request, clientPid, clientUid: rec.client_uid, clientGid: rec.client_gid },
        answered,
      );
    } catch (err) {
      await this.lock.run(async () => this.release(slot));
      throw err;
    }
    const recorded = await this.lock.run(async () => {
      if (slot.cancelled || this.slots.get(clientPid) !== slot || this.sessions.get(clientPid) !== rec) {
        this.release(slot);
        return false;
      }
      slot.handle = handle;
      rec.batch_server = handle.serverPid;
      this.sessions.put(rec);
      void handle.exited.then(() => this.lock.run(async () => this.forget(slot)));
      return true;
    });
    // The client may connect once the record naming the server is on disk: a daemon restarted
    // after a crash ends the servers its records name, and a server never admitted ends with
    // the daemon that started it (its stdin closes before the admit line). So no server runs
    // on unwatched, and the reply need not wait for the write: the client's connect does, for
    // the ms it takes, while the reply travels.
    if (!recorded) {
      await handle.stop();
      throw new NoSessionError(`The session of PID ${clientPid} ended while its batch server was starting`);
    }
    void this.sessions.settled(clientPid).then(() =>
      this.lock.run(async () => {
        if (slot.handle === handle && this.slots.get(clientPid) === slot) handle.admit();
      }),
    );
    return handle;
  }

  /** Stops the server of `clientPid` if it has one (cancels one starting); resolves once it has exited. */
  async stop(clientPid: number): Promise<void> {
    const slot = this.slots.get(clientPid);
    if (!slot) return;
    this.slots.delete(clientPid);
    if (!slot.handle) {
      slot.cancelled = true;
      return;
    }
    try {
      await slot.handle.stop();
    } finally {
      this.unrecord(slot);
    }
  }

  /** Stops every server that writes controls, starting or running (write mode is ending). */
  async stopWriters(): Promise<void> {
    for (const [pid, slot] of [...this.slots]) if (slot.hasControls) await this.stop(pid);
  }

  /** A server exited on its own: forget it unless the client already has another. */
  private forget(slot: BatchSlot): void {
    if (this.slots.get(slot.rec.client_pid) === slot) this.slots.delete(slot.rec.client_pid);
    this.unrecord(slot);
  }

  /** Clears the session's `batch_server` if it still names this slot's server. */
  private unrecord(slot: BatchSlot): void {
    const clientPid = slot.rec.client_pid;
    const rec = this.sessions.get(clientPid);
    if (!rec || rec.batch_server !== slot.handle?.serverPid) return;
    delete rec.batch_server;
    this.sessions.put(rec);
  }
}
