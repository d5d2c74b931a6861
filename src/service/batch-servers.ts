import { JoulegateError } from '../platform/errors.js';
import type { BatchLauncher, BatchServerHandle, BatchStartRequest } from './batch-port.js';
import type { Mutex } from './mutex.js';
import type { SessionRecord, SessionStore } from './sessions.js';

interface RunningBatch {
  handle: BatchServerHandle;
  hasControls: boolean;
}

/**
 * The running batch servers, at most one per client session, mirrored in the session record
 * (`batch_server`). Call only inside the session manager's lock, which decides when a server
 * starts or stops; a server's own exit is recorded under that lock too.
 */
export class BatchServers {
  private readonly running = new Map<number, RunningBatch>();

  constructor(
    private readonly launcher: BatchLauncher | undefined,
    private readonly sessions: SessionStore,
    private readonly lock: Mutex,
  ) {}

  /** Server pid of `clientPid`'s running batch server. */
  serverOf(clientPid: number): number | undefined {
    return this.running.get(clientPid)?.handle.serverPid;
  }

  /** Throws unless a server can be started for `clientPid` (it has none; a launcher exists). */
  checkCanStart(clientPid: number): BatchLauncher {
    const serverPid = this.serverOf(clientPid);
    if (serverPid !== undefined) {
      throw new JoulegateError(`Client ${clientPid} has already started a batch server: ${serverPid}`);
    }
    if (!this.launcher) throw new JoulegateError('batch servers are not available in this joulegated');
    return this.launcher;
  }

  /** Starts the batch server of session `rec` (which must have none). */
  async start(
    rec: SessionRecord,
    request: Pick<BatchStartRequest, 'runDir' | 'signals' | 'controls'>,
  ): Promise<BatchServerHandle> {
    const clientPid = rec.client_pid;
    const handle = await this.checkCanStart(clientPid).start({
      ...request,
      clientPid,
      clientUid: rec.client_uid,
      clientGid: rec.client_gid,
    });
    this.running.set(clientPid, { handle, hasControls: request.controls.length > 0 });
    rec.batch_server = handle.serverPid;
    this.sessions.put(rec);
    void handle.exited.then(() => this.lock.run(async () => this.forget(clientPid, handle)));
    return handle;
  }

  /** Stops the server of `clientPid` if it has one; resolves once it has exited. */
  async stop(clientPid: number): Promise<void> {
    const running = this.running.get(clientPid);
    if (!running) return;
    this.running.delete(clientPid);
    try {
      await running.handle.stop();
    } finally {
      this.unrecord(clientPid, running.handle.serverPid);
    }
  }

  /** Stops every server that writes controls (write mode is ending). */
  async stopWriters(): Promise<void> {
    for (const [pid, b] of [...this.running]) if (b.hasControls) await this.stop(pid);
  }

  /** A server exited on its own: forget it unless the client already has another. */
  private forget(clientPid: number, handle: BatchServerHandle): void {
    if (this.running.get(clientPid)?.handle === handle) this.running.delete(clientPid);
    this.unrecord(clientPid, handle.serverPid);
  }

  /** Clears the session's `batch_server` if it still names `serverPid`. */
  private unrecord(clientPid: number, serverPid: number): void {
    const rec = this.sessions.get(clientPid);
    if (rec?.batch_server !== serverPid) return;
    delete rec.batch_server;
    this.sessions.put(rec);
  }
}
