import koffi from 'koffi';

/**
 * The few libc calls the batch protocol needs and Node's fs lacks: mmap for shared memory,
 * mkfifo for the status FIFOs, fcntl to switch a FIFO back to blocking mode, and the pthread
 * mutex initialisation GEOPM keeps in the first bytes of each shared buffer. The one-byte FIFO
 * messages also go through libc's read/write: fs.readSync/writeSync cost about 1.5 µs more per
 * call (libuv request setup), which doubled a batch round trip (bench/batch.ts).
 * Loaded lazily so that importing the batch modules costs nothing until a batch is used.
 */
interface Libc {
  mmap(addr: null, length: number, prot: number, flags: number, fd: number, offset: number): unknown;
  munmap(addr: unknown, length: number): number;
  mkfifo(path: string, mode: number): number;
  fcntl(fd: number, cmd: number, ...rest: unknown[]): number;
  strerror(errnum: number): string;
  read(fd: number, buf: Buffer, count: number): number;
  write(fd: number, buf: Buffer, count: number): number;
  pthread_mutexattr_init(attr: Buffer): number;
  pthread_mutexattr_settype(attr: Buffer, kind: number): number;
  pthread_mutexattr_setpshared(attr: Buffer, pshared: number): number;
  pthread_mutexattr_destroy(attr: Buffer): number;
  pthread_mutex_init(mutex: unknown, attr: Buffer): number;
}

let libc: Libc | undefined;

function load(): Libc {
  if (libc) return libc;
  const lib = koffi.load('libc.so.6');
  libc = {
    mmap: lib.func('void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)'),
    munmap: lib.func('int munmap(void *addr, size_t length)'),
    mkfifo: lib.func('int mkfifo(const char *path, uint32_t mode)'),
    fcntl: lib.func('int fcntl(int fd, int cmd, ...)'),
    strerror: lib.func('const char *strerror(int errnum)'),
    read: lib.func('long read(int fd, void *buf, size_t count)'),
    write: lib.func('long write(int fd, void *buf, size_t count)'),
    pthread_mutexattr_init: lib.func('int pthread_mutexattr_init(void *attr)'),
    pthread_mutexattr_settype: lib.func('int pthread_mutexattr_settype(void *attr, int kind)'),
    pthread_mutexattr_setpshared: lib.func('int pthread_mutexattr_setpshared(void *attr, int pshared)'),
    pthread_mutexattr_destroy: lib.func('int pthread_mutexattr_destroy(void *attr)'),
    pthread_mutex_init: lib.func('int pthread_mutex_init(void *mutex, void *attr)'),
  } as Libc;
  return libc;
}

/** An error carrying the errno code name (EACCES, EEXIST, …) like Node's fs errors do. */
export class SystemCallError extends Error {
  readonly code: string;
  readonly errno: number;
  constructor(call: string, path: string, errno: number) {
    const code = errnoName(errno);
    super(`${call} ${path}: ${load().strerror(errno)} (${code})`);
    this.name = 'SystemCallError';
    this.code = code;
    this.errno = errno;
  }
}

function errnoName(errno: number): string {
  for (const [name, value] of Object.entries(koffi.os.errno)) if (value === errno) return name;
  return `errno ${errno}`;
}

const EINTR = koffi.os.errno.EINTR;

/** read(2) or write(2) of `count` bytes, retried on EINTR; returns the count done (0: end of file). */
function transfer(call: 'read' | 'write', fd: number, buf: Buffer, count: number): number {
  const c = load();
  for (;;) {
    const n = c[call](fd, buf, count);
    if (n >= 0) return n;
    const errno = koffi.errno();
    if (errno !== EINTR) throw new SystemCallError(call, `fd ${fd}`, errno);
  }
}

export function readFd(fd: number, buf: Buffer, count: number): number {
  return transfer('read', fd, buf, count);
}

export function writeFd(fd: number, buf: Buffer, count: number): number {
  return transfer('write', fd, buf, count);
}

const PROT_READ = 0x1;
const PROT_WRITE = 0x2;
const MAP_SHARED = 0x1;
/** mmap's MAP_FAILED, (void *)-1. */
const MAP_FAILED = 0xffffffffffffffffn;

/** A shared read/write mapping of a whole file; `bytes` is a view on the mapped memory. */
export interface Mapping {
  readonly bytes: ArrayBuffer;
  /** The raw address, for libc calls that write into the mapping. */
  readonly pointer: unknown;
  unmap(): void;
}

export function mapShared(fd: number, length: number, what: string): Mapping {
  const c = load();
  const ptr = c.mmap(null, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ptr === null || koffi.address(ptr) === MAP_FAILED)
    throw new SystemCallError('mmap', what, koffi.errno());
  let mapped = true;
  return {
    bytes: koffi.view(ptr, length),
    pointer: ptr,
    unmap() {
      if (!mapped) return;
      mapped = false;
      c.munmap(ptr, length);
    },
  };
}

export function makeFifo(path: string, mode: number): void {
  if (load().mkfifo(path, mode) !== 0) throw new SystemCallError('mkfifo', path, koffi.errno());
}

const F_GETFL = 3;
const F_SETFL = 4;

/** Clears O_NONBLOCK on an fd opened non-blocking only to avoid a deadlock at open time. */
export function setBlocking(fd: number, nonblockFlag: number): void {
  const c = load();
  const flags = c.fcntl(fd, F_GETFL);
  if (flags < 0 || c.fcntl(fd, F_SETFL, 'int', flags & ~nonblockFlag) < 0) {
    throw new SystemCallError('fcntl', `fd ${fd}`, koffi.errno());
  }
}

const PTHREAD_MUTEX_ERRORCHECK = 2;
const PTHREAD_PROCESS_SHARED = 1;

/**
 * Initialises a process-shared error-checking pthread mutex at the start of the mapping, as
 * GEOPM's SharedMemory does, so the header bytes match what its clients expect.
 */
export function initSharedMutex(mapping: Mapping, what: string): void {
  const c = load();
  const attr = Buffer.alloc(64); // pthread_mutexattr_t is 4 or 8 bytes; room to spare
  const calls: [string, () => number][] = [
    ['pthread_mutexattr_init', () => c.pthread_mutexattr_init(attr)],
    ['pthread_mutexattr_settype', () => c.pthread_mutexattr_settype(attr, PTHREAD_MUTEX_ERRORCHECK)],
    ['pthread_mutexattr_setpshared', () => c.pthread_mutexattr_setpshared(attr, PTHREAD_PROCESS_SHARED)],
    ['pthread_mutex_init', () => c.pthread_mutex_init(mapping.pointer, attr)],
  ];
  try {
    for (const [name, call] of calls) {
      const rc = call();
      if (rc !== 0) throw new SystemCallError(name, what, rc);
    }
  } finally {
    c.pthread_mutexattr_destroy(attr);
  }
}
