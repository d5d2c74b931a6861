import { InvalidArgumentError, JoulegateError } from '../platform/errors.js';
import type { BatchLauncher, BatchServerHandle, BatchStartRequest } from './batch-port.js';
import { NoSessionError } from './errors.js';
import type { Mutex } from './mutex.js';
import type { SessionRecord, SessionStore } from './sessions.js';
import { StartAdmission, type StartTurn } from './start-admission.js';

/**
 * A client's batch server: waiting for its turn to start, starting, running, then ended (done
 * with its client on its own: the client quit or went away, or the process died).
 */
export interface BatchSlot {
  readonly rec: SessionRecord;
  readonly hasControls: boolean;
  /**
   * Waiting and ended slots hold no place under the limits; starting and running ones do. An
   * ended slot is kept so that the client's PlatformStopBatch of it is acknowledged (as GEOPM
   * does after its client's `q`), until the client starts another server or its session ends.
   */
  phase: 'waiting' | 'starting' | 'running' | 'ended';
  handle?: BatchServerHandle;
  /** Aborted when the session ends (or controls are locked) before the server runs. */
  readonly cancel: AbortController;
}

/** Why a start was given up, once the reason is known (the first reason wins). */
function abandoned(signal: AbortSignal): Error {
  const reason = signal.reason;
  return reason instanceof Error ? reason : new JoulegateError(String(reason));
}

/**
 * The batch servers, at most one per client session, mirrored in the session record
 * (`batch_server`). A start is decided in short steps inside the session manager's lock —
 * reserve (checks), take a place under the limits once its turn comes (StartAdmission: per-uid
 * queues served round-robin), record — with the waiting and the slow process start between them
 * outside the lock, so other clients are not kept waiting. A start given up meanwhile (session
 * ended, caller's connection gone, start deadline passed) never leaves a server behind: its
 * server is stopped once started, before it ever admits its client.
 */
export class BatchServers {
  private readonly slots = new Map<number, BatchSlot>();
  private readonly admission?: StartAdmission;

  constructor(
    private readonly launcher: BatchLauncher | undefined,
    private readonly sessions: SessionStore,
    private readonly lock: Mutex,
  ) {
    if (launcher) this.admission = new StartAdmission(launcher.limits.startsAtOnce, launcher.limits.perUser);
  }

  /** Server pid of `clientPid`'s running batch server. */
  serverOf(clientPid: number): number | undefined {
    return this.slots.get(clientPid)?.handle?.serverPid;
  }

  /** Places taken under the limits (starting or running servers), of `uid` and in all. */
  private places(uid: number): { ofUser: number; total: number } {
    let ofUser = 0;
    let total = 0;
    for (const slot of this.slots.values()) {
      if (slot.phase === 'waiting' || slot.phase === 'ended') continue;
      total++;
      if (slot.rec.client_uid === uid) ofUser++;
    }
    return { ofUser, total };
  }

  /** Throws if `uid` may not take another place now (the per-user or the node-wide limit). */
  private checkPlaces(uid: number): void {
    const { perUser, total } = this.launcher!.limits;
    const taken = this.places(uid);
    if (taken.total >= total) {
      throw new InvalidArgumentError(
        `Batch server limit reached: ${taken.total} servers run on this node (limit ${total}, JOULEGATE_BATCH_MAX_SERVERS)`,
      );
    }
    if (taken.ofUser >= perUser) {
      throw new InvalidArgumentError(
        `Batch server limit reached: uid ${uid} has ${taken.ofUser} batch servers (limit ${perUser}, JOULEGATE_BATCH_MAX_PER_USER)`,
      );
    }
  }

  /**
   * In the lock: reserves the server of session `rec` (it waits for its turn holding no place).
   * Throws if it has one (or one starting), if there is no launcher, or if the limits are
   * reached already (a start refused now need not wait for its turn to learn it).
   */
  reserve(rec: SessionRecord, hasControls: boolean): BatchSlot {
    const clientPid = rec.client_pid;
    const existing = this.slots.get(clientPid);
    if (existing && existing.phase !== 'ended') {
      const pid = existing.handle?.serverPid;
      throw new JoulegateError(
        pid === undefined
          ? `Client ${clientPid} is already starting a batch server`
          : `Client ${clientPid} has already started a batch server: ${pid}`,
      );
    }
    if (!this.launcher) throw new JoulegateError('batch servers are not available in this joulegated');
    this.checkPlaces(rec.client_uid);
    const slot: BatchSlot = { rec, hasControls, phase: 'waiting', cancel: new AbortController() };
    this.slots.set(clientPid, slot);
    return slot;
  }

  /** In the lock: gives a reservation back (the start was refused or given up). */
  release(slot: BatchSlot): void {
    if (this.slots.get(slot.rec.client_pid) === slot) this.slots.delete(slot.rec.client_pid);
  }

  /** Whether the slot's start may go on: not cancelled, still the session's, the session still open. */
  private current(slot: BatchSlot): boolean {
    const clientPid = slot.rec.client_pid;
    return (
      !slot.cancel.signal.aborted &&
      this.slots.get(clientPid) === slot &&
      this.sessions.get(clientPid) === slot.rec
    );
  }

  /**
   * Outside the lock: waits for the slot's turn, takes its place (in the lock), starts the
   * server, then records it in the lock and lets its client connect — unless the start was
   * given up meanwhile (`giveUp`: nobody waits for the answer any more, or the slot was
   * cancelled), in which case the server is stopped as soon as it is up and the place freed.
   */
  async launch(
    slot: BatchSlot,
    request: Pick<BatchStartRequest, 'runDir' | 'signals' | 'controls'>,
    giveUp: AbortSignal,
    answered?: Promise<void>,
  ): Promise<BatchServerHandle> {
    const { rec } = slot;
    const clientPid = rec.client_pid;
    const stopped = AbortSignal.any([slot.cancel.signal, giveUp]);
    let handle: BatchServerHandle;
    let turn: StartTurn;
    try {
      turn = await this.admission!.turn(rec.client_uid, stopped);
    } catch (err) {
      await this.lock.run(async () => this.release(slot));
      throw err;
    }
    try {
      await this.lock.run(async () => {
        if (!this.current(slot) || giveUp.aborted) {
          this.release(slot);
          throw stopped.aborted ? abandoned(stopped) : this.endedWhileStarting(clientPid);
        }
        try {
          this.checkPlaces(rec.client_uid);
        } catch (err) {
          this.release(slot);
          throw err;
        }
        slot.phase = 'starting';
      });
      try {
        handle = await this.launcher!.start(
          { ...request, clientPid, clientUid: rec.client_uid, clientGid: rec.client_gid },
          answered,
        );
      } catch (err) {
        await this.lock.run(async () => this.release(slot));
        throw err;
      }
    } finally {
      turn.release();
    }
    const recorded = await this.lock.run(async () => {
      if (!this.current(slot) || giveUp.aborted) {
        this.release(slot);
        return false;
      }
      slot.handle = handle;
      slot.phase = 'running';
      rec.batch_server = handle.serverPid;
      this.sessions.put(rec);
      void handle.exited.then(() => this.lock.run(async () => this.ended(slot)));
      return true;
    });
    // The client may connect once the record naming the server is on disk: a daemon restarted
    // after a crash ends the servers its records name, and a server never admitted ends with
    // the daemon that started it (its stdin closes before the admit line). So no server runs
    // on unwatched, and the reply need not wait for the write: the client's connect does, for
    // the ms it takes, while the reply travels.
    if (!recorded) {
      await handle.stop();
      throw stopped.aborted ? abandoned(stopped) : this.endedWhileStarting(clientPid);
    }
    void this.sessions.settled(clientPid).then(() =>
      this.lock.run(async () => {
        if (slot.handle === handle && this.slots.get(clientPid) === slot) handle.admit();
      }),
    );
    return handle;
  }

  private endedWhileStarting(clientPid: number): NoSessionError {
    return new NoSessionError(`The session of PID ${clientPid} ended while its batch server was starting`);
  }

  /** Stops the server of `clientPid` if it has one (cancels one starting); resolves once it has exited. */
  async stop(clientPid: number): Promise<void> {
    const slot = this.slots.get(clientPid);
    if (!slot) return;
    this.slots.delete(clientPid);
    if (!slot.handle) {
      slot.cancel.abort(this.endedWhileStarting(clientPid));
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

  /** A server is done with its client on its own: it holds no place, the record no longer names it. */
  private ended(slot: BatchSlot): void {
    if (this.slots.get(slot.rec.client_pid) === slot) slot.phase = 'ended';
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
