import type { KoffiFunc } from 'koffi';
import { loadKoffi } from './ffi.js';

/**
 * The C library, loaded once (on first use, like koffi itself) with every function joulegate
 * calls in it: what Node's fs and os lack.
 * - Batch protocol: mmap/munmap for shared buffers, mkfifo and fcntl for the status FIFOs, the
 *   process-shared pthread mutex GEOPM keeps at the start of each buffer, and read/write for
 *   the one-byte FIFO messages (fs.readSync/writeSync cost about 1.5 µs more per call in libuv
 *   request setup, which doubled a batch round trip: bench/batch.ts), and pread for the files a
 *   batch server polls (see PolledFile).
 * - Client processes: getsid, sysconf for the clock tick, clock_gettime for the boot-time clock
 *   that process start times count in, and pidfd_open (through syscall) with poll and close, to
 *   learn with one system call whether a process has exited.
 * - A batch server's placement next to its client: sched_getcpu and sched_get/setaffinity.
 * - The daemon's single-instance lock on its run directory: flock.
 * - NSS user and group lookups (getpw*_r, getgr*_r, getgrouplist), so LDAP/SSSD users resolve
 *   as they do at login.
 */
export interface Libc {
  mmap(addr: null, length: number, prot: number, flags: number, fd: number, offset: number): unknown;
  munmap(addr: unknown, length: number): number;
  mkfifo(path: string, mode: number): number;
  fcntl(fd: number, cmd: number, ...rest: unknown[]): number;
  strerror(errnum: number): string;
  read(fd: number, buf: Buffer, count: number): number;
  write(fd: number, buf: Buffer, count: number): number;
  pread(fd: number, buf: Buffer, count: number, offset: number): number;
  pthread_mutexattr_init(attr: Buffer): number;
  pthread_mutexattr_settype(attr: Buffer, kind: number): number;
  pthread_mutexattr_setpshared(attr: Buffer, pshared: number): number;
  pthread_mutexattr_destroy(attr: Buffer): number;
  pthread_mutex_init(mutex: unknown, attr: Buffer): number;
  flock(fd: number, operation: number): number;
  getsid(pid: number): number;
  sysconf(name: number): number;
  /** `ts` is a struct timespec: two 64-bit fields, seconds and nanoseconds (64-bit Linux). */
  clock_gettime(clock: number, ts: Buffer): number;
  /** pidfd_open(2) goes through syscall(2): glibc before 2.36 has no wrapper. */
  syscall(number: number, ...rest: unknown[]): number;
  poll(fds: Buffer, nfds: number, timeout: number): number;
  close(fd: number): number;
  sched_getcpu(): number;
  /** Of the calling thread with pid 0; `mask` is a CPU bit set of `size` bytes. */
  sched_getaffinity(pid: number, size: number, mask: Buffer): number;
  sched_setaffinity(pid: number, size: number, mask: Buffer): number;
  /**
   * The *_r lookups fill `out` (a `struct passwd` / `struct group` as an object). NSS may wait
   * on a network directory: `.async` runs a lookup on a worker thread.
   */
  getpwnam_r: KoffiFunc<(name: string, out: object, buf: Buffer, len: number, result: unknown[]) => number>;
  getpwuid_r: KoffiFunc<(uid: number, out: object, buf: Buffer, len: number, result: unknown[]) => number>;
  getgrnam_r: KoffiFunc<(name: string, out: object, buf: Buffer, len: number, result: unknown[]) => number>;
  getgrgid_r: KoffiFunc<(gid: number, out: object, buf: Buffer, len: number, result: unknown[]) => number>;
  getgrouplist: KoffiFunc<(user: string, group: number, groups: Uint32Array, ngroups: number[]) => number>;
}

let loaded: Libc | undefined;

export function libc(): Libc {
  if (loaded) return loaded;
  const koffi = loadKoffi();
  const lib = koffi.load('libc.so.6');
  koffi.struct('jg_passwd', {
    pw_name: 'char *',
    pw_passwd: 'char *',
    pw_uid: 'uint32_t',
    pw_gid: 'uint32_t',
    pw_gecos: 'char *',
    pw_dir: 'char *',
    pw_shell: 'char *',
  });
  koffi.struct('jg_group', { gr_name: 'char *', gr_passwd: 'char *', gr_gid: 'uint32_t', gr_mem: 'void *' });
  const nssLookup = (name: string, key: string, struct: string) =>
    lib.func(`int ${name}(${key}, _Out_ ${struct} *out, uint8_t *buf, size_t len, _Out_ void **result)`);
  loaded = {
    mmap: lib.func('void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)'),
    munmap: lib.func('int munmap(void *addr, size_t length)'),
    mkfifo: lib.func('int mkfifo(const char *path, uint32_t mode)'),
    fcntl: lib.func('int fcntl(int fd, int cmd, ...)'),
    strerror: lib.func('const char *strerror(int errnum)'),
    read: lib.func('long read(int fd, void *buf, size_t count)'),
    write: lib.func('long write(int fd, void *buf, size_t count)'),
    pread: lib.func('long pread(int fd, void *buf, size_t count, int64_t offset)'),
    pthread_mutexattr_init: lib.func('int pthread_mutexattr_init(void *attr)'),
    pthread_mutexattr_settype: lib.func('int pthread_mutexattr_settype(void *attr, int kind)'),
    pthread_mutexattr_setpshared: lib.func('int pthread_mutexattr_setpshared(void *attr, int pshared)'),
    pthread_mutexattr_destroy: lib.func('int pthread_mutexattr_destroy(void *attr)'),
    pthread_mutex_init: lib.func('int pthread_mutex_init(void *mutex, void *attr)'),
    flock: lib.func('int flock(int fd, int operation)'),
    getsid: lib.func('int getsid(int pid)'),
    sysconf: lib.func('long sysconf(int name)'),
    clock_gettime: lib.func('int clock_gettime(int clock, void *ts)'),
    syscall: lib.func('long syscall(long number, ...)'),
    poll: lib.func('int poll(void *fds, unsigned long nfds, int timeout)'),
    close: lib.func('int close(int fd)'),
    sched_getcpu: lib.func('int sched_getcpu()'),
    sched_getaffinity: lib.func('int sched_getaffinity(int pid, size_t size, _Out_ uint8_t *mask)'),
    sched_setaffinity: lib.func('int sched_setaffinity(int pid, size_t size, const uint8_t *mask)'),
    getpwnam_r: nssLookup('getpwnam_r', 'const char *name', 'jg_passwd'),
    getpwuid_r: nssLookup('getpwuid_r', 'uint32_t uid', 'jg_passwd'),
    getgrnam_r: nssLookup('getgrnam_r', 'const char *name', 'jg_group'),
    getgrgid_r: nssLookup('getgrgid_r', 'uint32_t gid', 'jg_group'),
    getgrouplist: lib.func(
      'int getgrouplist(const char *user, uint32_t group, _Out_ uint32_t *groups, _Inout_ int *ngroups)',
    ),
  } as Libc;
  return loaded;
}

/** errno left by the last libc call on this thread. */
export function lastErrno(): number {
  return loadKoffi().errno();
}

/** The errno value called `name` (EINTR, EAGAIN, …) on this platform. */
export function errnoValue(name: string): number {
  const value = loadKoffi().os.errno[name];
  if (value === undefined) throw new Error(`unknown errno name ${name}`);
  return value;
}

function errnoName(errno: number): string {
  for (const [name, value] of Object.entries(loadKoffi().os.errno)) if (value === errno) return name;
  return `errno ${errno}`;
}

/** An error carrying the errno code name (EACCES, EEXIST, …) like Node's fs errors do. */
export class SystemCallError extends Error {
  readonly code: string;
  readonly errno: number;
  constructor(call: string, path: string, errno: number) {
    const code = errnoName(errno);
    super(`${call} ${path}: ${libc().strerror(errno)} (${code})`);
    this.name = 'SystemCallError';
    this.code = code;
    this.errno = errno;
  }
}
