import { libc } from './libc.js';
import { isRunning, type ProcessFacts, processStatus } from './process.js';

/**
 * pidfd_open(2)'s number: one number on every architecture, from the syscall table all new
 * system calls share (Linux 5.3).
 */
const SYS_PIDFD_OPEN = 434;
const POLLIN = 1;

/** A pidfd on `pid`, or -1 where pidfds are not to be had (no koffi, Linux before 5.3, seccomp). */
function pidfdOpen(pid: number): number {
  try {
    return libc().syscall(SYS_PIDFD_OPEN, 'int', pid, 'unsigned int', 0);
  } catch {
    return -1;
  }
}

/**
 * One process, named by its pid and start time, that is asked again and again whether it is
 * still running. A pidfd refers to the process itself, never to a later process given the same
 * pid, and polls readable once the process has exited (zombie or reaped): asking is one
 * poll(2) with no wait. Reading /proc/<pid>/stat instead costs an open, a read and a close and
 * the text's formatting each time. Where pidfds are not available (Linux before 5.3, seccomp),
 * every question reads /proc (isRunning).
 */
export class ProcessHandle {
  private readonly pollfd = Buffer.alloc(8);

  private constructor(
    readonly pid: number,
    readonly startTicks: number,
    private fd: number,
  ) {
    this.pollfd.writeInt32LE(fd, 0);
    this.pollfd.writeInt16LE(POLLIN, 4);
  }

  /** A handle on the process `pid` that started at `startTicks`, or undefined if it is not running. */
  static open(pid: number, startTicks: number): ProcessHandle | undefined {
    return ProcessHandle.pin(pid, () => (isRunning(pid, startTicks) ? { startTicks } : undefined))?.handle;
  }

  /**
   * A handle on the process `pid` names now, with what `describe` read of it (its start time at
   * least). The pidfd is opened before the read and polled after it: the pidfd names the process
   * that had the pid then, and a process that has not exited keeps its pid, so what was read was
   * that process's. Undefined when `describe` finds nothing or the process exited meanwhile.
   */
  static pin<T extends { startTicks: number }>(
    pid: number,
    describe: () => T | undefined,
  ): { handle: ProcessHandle; facts: T } | undefined {
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    const fd = pidfdOpen(pid);
    let facts: T | undefined;
    try {
      facts = describe();
    } finally {
      if (facts === undefined && fd >= 0) libc().close(fd);
    }
    if (facts === undefined) return undefined;
    const handle = new ProcessHandle(pid, facts.startTicks, fd);
    if (handle.running()) return { handle, facts };
    handle.close();
    return undefined;
  }

  /**
   * Another handle on the same process, for a holder with another lifetime: a new pidfd on the
   * pid, which names this process if it has not exited after the new one was opened.
   */
  duplicate(): ProcessHandle | undefined {
    // Closed (or never with a pidfd): a handle of its own, checked against the start time.
    if (this.fd < 0) return ProcessHandle.open(this.pid, this.startTicks);
    // Where no pidfd is to be had now (EMFILE) the copy asks /proc, as a handle without one does.
    const copy = new ProcessHandle(this.pid, this.startTicks, pidfdOpen(this.pid));
    if (this.running()) return copy;
    copy.close();
    return undefined;
  }

  /**
   * The process's ids and capabilities now: one read of its status, then one poll, which says
   * the status was this process's. Undefined once it has exited.
   */
  facts(): ProcessFacts | undefined {
    const status = processStatus(this.pid);
    if (status === undefined || !this.running()) return undefined;
    return { pid: this.pid, startTicks: this.startTicks, ...status };
  }

  /** Whether the process is still running (not exited, not a zombie). */
  running(): boolean {
    if (this.fd < 0) return isRunning(this.pid, this.startTicks);
    this.pollfd.writeInt16LE(0, 6);
    const ready = libc().poll(this.pollfd, 1, 0);
    if (ready < 0) return isRunning(this.pid, this.startTicks); // EINTR and the like: ask /proc
    return ready === 0;
  }

  /** runningEach's pollfd array, reused: a buffer per poll is an ArrayBuffer for V8 to track. */
  private static pollScratch = Buffer.alloc(64);

  /**
   * Whether each of `handles` is still running, from one poll(2) over all their pidfds: a
   * system call costs about as much as the rest of a D-Bus call here, so the questions of one
   * turn are answered together. A closed handle or one without a pidfd reads /proc; a lone
   * handle is asked with its own buffer.
   */
  static runningEach(handles: readonly ProcessHandle[]): boolean[] {
    if (handles.length === 1) return [handles[0]!.running()];
    const polled = handles.filter((h) => h.fd >= 0);
    if (ProcessHandle.pollScratch.length < 8 * polled.length) {
      ProcessHandle.pollScratch = Buffer.alloc(Math.max(64, 16 * polled.length));
    }
    const fds = ProcessHandle.pollScratch;
    for (const [i, h] of polled.entries()) {
      fds.writeInt32LE(h.fd, 8 * i);
      fds.writeInt16LE(POLLIN, 8 * i + 4);
      fds.writeInt16LE(0, 8 * i + 6);
    }
    const ready = polled.length > 0 ? libc().poll(fds, polled.length, 0) : 0;
    const exited = new Set<ProcessHandle>();
    for (const [i, h] of polled.entries()) {
      if (ready > 0 && fds.readInt16LE(8 * i + 6) !== 0) exited.add(h);
    }
    return handles.map((h) => (h.fd < 0 || ready < 0 ? isRunning(h.pid, h.startTicks) : !exited.has(h)));
  }

  close(): void {
    if (this.fd >= 0) libc().close(this.fd);
    this.fd = -1;
  }
}
