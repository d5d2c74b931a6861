import { chownSync, closeSync, constants, open, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { JoulegateError } from '../../platform/errors.js';
import { errnoValue, type Libc, lastErrno, libc, SystemCallError } from '../../platform/libc.js';
import { sleepSync } from '../../platform/sleep-sync.js';
import { fifoPath } from './protocol.js';

/** After a failed read(2) or write(2): returns if it was interrupted (retry), else throws. */
function failUnlessInterrupted(call: 'read' | 'write', fd: number): void {
  const errno = lastErrno();
  if (errno !== errnoValue('EINTR')) throw new SystemCallError(call, `fd ${fd}`, errno);
}

function makeFifo(path: string, mode: number): void {
  if (libc().mkfifo(path, mode) !== 0) throw new SystemCallError('mkfifo', path, lastErrno());
}

const F_GETFL = 3;
const F_SETFL = 4;

/** Clears O_NONBLOCK on an fd opened non-blocking only to avoid a deadlock at open time. */
function setBlocking(fd: number): void {
  const c = libc();
  const flags = c.fcntl(fd, F_GETFL);
  if (flags < 0 || c.fcntl(fd, F_SETFL, 'int', flags & ~constants.O_NONBLOCK) < 0) {
    throw new SystemCallError('fcntl', `fd ${fd}`, lastErrno());
  }
}

const openInWorker = promisify(open);

/** Linux open(2) flag: a handle on the inode that neither reads nor writes (nor blocks). */
const O_PATH = 0o10000000;

/**
 * Opens one end of a FIFO in a libuv worker thread, where the open blocks until the other side
 * opens its end: a waiting server sleeps in the kernel instead of polling, and its event loop
 * stays free. When `signal` aborts, the server opens the other end itself (non-blocking) so the
 * pending open returns: a worker left blocked would keep the process from exiting. It does so
 * through an O_PATH handle taken first, so this works even once the FIFO's name is gone (a test
 * or a new daemon cleaning the run dir).
 */
async function openWhenPartnered(path: string, end: 'read' | 'write', signal: AbortSignal): Promise<number> {
  signal.throwIfAborted();
  const anchor = openSync(path, O_PATH);
  const pending = openInWorker(path, end === 'read' ? constants.O_RDONLY : constants.O_WRONLY);
  const partnerFlags = (end === 'read' ? constants.O_WRONLY : constants.O_RDONLY) | constants.O_NONBLOCK;
  let partner = -1;
  let settled = false;
  let retry: NodeJS.Timeout | undefined;
  const unblock = () => {
    if (settled) return;
    try {
      partner = openSync(`/proc/self/fd/${anchor}`, partnerFlags);
    } catch (err) {
      // ENXIO: the worker has not started its read open yet (a write end needs a reader).
      if ((err as NodeJS.ErrnoException).code === 'ENXIO') retry = setTimeout(unblock, 1);
    }
  };
  signal.addEventListener('abort', unblock, { once: true });
  let fd: number;
  try {
    fd = await pending;
  } finally {
    settled = true;
    clearTimeout(retry);
    signal.removeEventListener('abort', unblock);
    if (partner >= 0) closeSync(partner);
    closeSync(anchor);
  }
  if (signal.aborted) {
    closeSync(fd);
    throw signal.reason;
  }
  return fd;
}

/** Byte value `receive()` returns when the other side closed its end (GEOPM reads this as 0). */
export const END_OF_STREAM = 0;

/** How long a client without koffi sleeps between looks at a FIFO that has no reply yet. */
const POLL_MS = 0.1;

/** An fs call's error that only means "not now": try again. */
function retryable(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'EAGAIN' || code === 'EINTR';
}

/**
 * One side of the pair of status FIFOs: blocking one-byte messages. Blocking reads are the
 * point — a batch round trip is two context switches, nothing else — so this is only used in
 * the batch server process and, on the client side, for the few microseconds a reply takes.
 * A client may start without koffi (`native` false in connect): its FIFOs stay non-blocking and
 * a reply is looked for every POLL_MS with Node's own calls, until useNative().
 */
export class StatusChannel {
  private readonly byte = Buffer.alloc(1);
  // The libc calls themselves, looked up once: one direct call per message.
  private readCall: Libc['read'] | undefined;
  private writeCall: Libc['write'] | undefined;

  private constructor(
    private readonly readFd: number,
    private readonly writeFd: number,
    native: boolean,
  ) {
    if (native) ({ read: this.readCall, write: this.writeCall } = libc());
  }

  /** The two descriptors, for a loop in native code that takes over receive() and send(). */
  get fds(): { read: number; write: number } {
    return { read: this.readFd, write: this.writeFd };
  }

  /** Client: blocking fds and libc's read and write from here on (loads koffi); idempotent. */
  useNative(): void {
    if (this.readCall) return;
    setBlocking(this.readFd);
    setBlocking(this.writeFd);
    ({ read: this.readCall, write: this.writeCall } = libc());
  }

  send(message: number): void {
    this.byte[0] = message;
    if (this.writeCall) {
      while (this.writeCall(this.writeFd, this.byte, 1) < 0) failUnlessInterrupted('write', this.writeFd);
      return;
    }
    // Non-blocking: one byte always fits, as only one message is ever in the pipe.
    for (;;) {
      try {
        if (writeSync(this.writeFd, this.byte, 0, 1) === 1) return;
      } catch (err) {
        if (!retryable(err)) throw err;
      }
      sleepSync(POLL_MS);
    }
  }

  /** Waits for one byte; END_OF_STREAM when the peer has gone. */
  receive(): number {
    if (this.readCall) {
      for (;;) {
        const n = this.readCall(this.readFd, this.byte, 1);
        if (n >= 0) return n === 1 ? this.byte[0]! : END_OF_STREAM;
        failUnlessInterrupted('read', this.readFd);
      }
    }
    for (;;) {
      try {
        const n = readSync(this.readFd, this.byte, 0, 1, null);
        return n === 1 ? this.byte[0]! : END_OF_STREAM;
      } catch (err) {
        if (!retryable(err)) throw err;
      }
      sleepSync(POLL_MS);
    }
  }

  close(): void {
    for (const fd of [this.readFd, this.writeFd]) {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    }
  }

  /** Server: makes both FIFOs (0600, owned by the client) before the client is told the key. */
  static create(
    runDir: string,
    key: string,
    owner: { uid: number; gid: number },
    onCreated: (path: string) => void,
  ): void {
    for (const direction of ['in', 'out'] as const) {
      const path = fifoPath(runDir, key, direction);
      makeFifo(path, 0o600);
      onCreated(path);
      chownSync(path, owner.uid, owner.gid);
    }
  }

  /**
   * Server: opens `out` for writing, then `in` for reading (the order the client mirrors, so
   * neither blocks forever), then unlinks both: from here on only the two connected processes
   * hold them. Each open waits for the client in a worker thread (no polling); aborting
   * `signal` gives up the wait with its reason.
   */
  static async accept(runDir: string, key: string, signal: AbortSignal): Promise<StatusChannel> {
    const outPath = fifoPath(runDir, key, 'out');
    const inPath = fifoPath(runDir, key, 'in');
    const writeFd = await openWhenPartnered(outPath, 'write', signal);
    let readFd: number;
    try {
      readFd = await openWhenPartnered(inPath, 'read', signal);
    } catch (err) {
      closeSync(writeFd);
      throw err;
    }
    unlinkSync(outPath);
    unlinkSync(inPath);
    return new StatusChannel(readFd, writeFd, true);
  }

  /**
   * Client: opens `out` for reading, then `in` for writing. Both opens are non-blocking so a
   * server that died before connecting gives an error after `timeoutMs` instead of a hang; the
   * fds are switched to blocking once connected, or with `native` false at useNative().
   */
  static connect(runDir: string, key: string, timeoutMs: number, native = true): StatusChannel {
    const outPath = fifoPath(runDir, key, 'out');
    const inPath = fifoPath(runDir, key, 'in');
    const nonblock = constants.O_NONBLOCK;
    const readFd = openSync(outPath, constants.O_RDONLY | nonblock);
    const deadline = Date.now() + timeoutMs;
    let writeFd = -1;
    while (writeFd < 0) {
      try {
        writeFd = openSync(inPath, constants.O_WRONLY | nonblock);
      } catch (err) {
        // ENXIO: the server has not opened its reading end yet
        if ((err as NodeJS.ErrnoException).code !== 'ENXIO' || Date.now() > deadline) {
          closeSync(readFd);
          if ((err as NodeJS.ErrnoException).code === 'ENXIO') {
            throw new JoulegateError(`batch server ${key} did not connect within ${timeoutMs} ms`);
          }
          throw err;
        }
        sleepSync(1);
      }
    }
    const channel = new StatusChannel(readFd, writeFd, false);
    try {
      if (native) channel.useNative();
    } catch (err) {
      channel.close();
      throw err;
    }
    return channel;
  }
}
