import { isRunning, type ProcessIdentity, processStatus } from '../platform/process.js';
import { ProcessHandle } from '../platform/process-handle.js';

/**
 * Most handles kept open (one file descriptor each): past this many sessions, a new session's
 * process is checked by reading /proc each time instead.
 */
const MAX_HANDLES = 4096;

/**
 * Handles on the processes of open sessions, so that the read path (PlatformReadSignal,
 * PlatformGetUserAccess, …) learns whether a session's process still runs with one poll(2)
 * rather than a /proc read per call. An entry is opened on first use and closed when its
 * session closes (or a later session of the same pid, a recycled pid, replaces it).
 */
export class SessionProcesses {
  private readonly handles = new Map<number, ProcessHandle>();
  /** Questions of this turn for runningSoon, answered together. */
  private asked: { handle: ProcessHandle; resolve: (running: boolean) => void }[] = [];
  private readonly answer = (): void => {
    const asked = this.asked;
    this.asked = [];
    const running = ProcessHandle.runningEach(asked.map((q) => q.handle));
    for (const [i, q] of asked.entries()) q.resolve(running[i]!);
  };

  /** Whether the process `pid` that started at `startTicks` is still running. */
  running(pid: number, startTicks: number): boolean {
    const handle = this.handleFor(pid, startTicks);
    return typeof handle === 'boolean' ? handle : handle.running();
  }

  /**
   * As running(), answered at the end of this turn together with every other question asked
   * in it, by one poll(2): the read path asks once per call, and one read from the bus holds
   * calls of many sessions. Each answer is from after its question.
   */
  runningSoon(pid: number, startTicks: number): Promise<boolean> {
    const handle = this.handleFor(pid, startTicks);
    if (typeof handle === 'boolean') return Promise.resolve(handle);
    return new Promise((resolve) => {
      if (this.asked.push({ handle, resolve }) === 1) process.nextTick(this.answer);
    });
  }

  /** The open handle on the process, or the answer itself where no handle is kept. */
  private handleFor(pid: number, startTicks: number): ProcessHandle | boolean {
    let handle = this.handles.get(pid);
    if (handle && handle.startTicks !== startTicks) {
      this.forget(pid);
      handle = undefined;
    }
    if (handle) return handle;
    if (this.handles.size >= MAX_HANDLES) return isRunning(pid, startTicks);
    handle = ProcessHandle.open(pid, startTicks);
    if (!handle) return false;
    this.handles.set(pid, handle);
    return handle;
  }

  /**
   * Whether the process of `identity` still runs with its uid and gid (a process may change
   * them; its session then no longer matches). One read of its status, then one poll of its
   * handle: the poll, after the read, says the status was that process's (its pid goes to no
   * other while it has not exited). isSameProcess reads its stat as well.
   */
  isSame(identity: ProcessIdentity): boolean {
    const ids = processStatus(identity.pid);
    return (
      ids !== undefined &&
      ids.uid === identity.uid &&
      ids.gid === identity.gid &&
      this.running(identity.pid, identity.startTicks)
    );
  }

  /**
   * A new session's process, already pinned by another handle (its caller's): a copy is kept,
   * so the session's first check reads nothing. Any handle of an earlier process with the same
   * pid goes.
   */
  adopt(handle: ProcessHandle): void {
    const kept = this.handles.get(handle.pid);
    if (kept?.startTicks === handle.startTicks) return;
    if (!kept && this.handles.size >= MAX_HANDLES) return;
    const copy = handle.duplicate();
    if (!copy) return; // exited: the session's first check says so, through whatever is kept
    if (kept) this.forget(handle.pid);
    this.handles.set(handle.pid, copy);
  }

  /** The session of `pid` closed: its handle goes. */
  forget(pid: number): void {
    this.handles.get(pid)?.close();
    this.handles.delete(pid);
  }

  get size(): number {
    return this.handles.size;
  }
}
