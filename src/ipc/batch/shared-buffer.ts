import { closeSync, constants, fchownSync, fstatSync, ftruncateSync, openSync } from 'node:fs';
import { endianness } from 'node:os';
import { JoulegateError } from '../../platform/errors.js';
import { loadKoffi } from '../../platform/ffi.js';
import { lastErrno, libc, SystemCallError } from '../../platform/libc.js';
import { bufferBytes, HEADER_BYTES } from './protocol.js';

if (endianness() !== 'LE') {
  // The wire format is little-endian doubles and Float64Array uses the host's byte order.
  throw new Error('the batch protocol needs a little-endian host');
}

const PROT_READ = 0x1;
const PROT_WRITE = 0x2;
const MAP_SHARED = 0x1;
/** mmap's MAP_FAILED, (void *)-1. */
const MAP_FAILED = 0xffffffffffffffffn;

/** A shared read/write mapping of a whole file; `bytes` is a view on the mapped memory. */
interface Mapping {
  readonly bytes: ArrayBuffer;
  /** The raw address, for libc calls that write into the mapping. */
  readonly pointer: unknown;
  unmap(): void;
}

function mapShared(fd: number, length: number, what: string): Mapping {
  const c = libc();
  const ptr = c.mmap(null, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const koffi = loadKoffi();
  if (ptr === null || koffi.address(ptr) === MAP_FAILED) throw new SystemCallError('mmap', what, lastErrno());
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

const PTHREAD_MUTEX_ERRORCHECK = 2;
const PTHREAD_PROCESS_SHARED = 1;

/**
 * Initialises a process-shared error-checking pthread mutex at the start of the mapping, as
 * GEOPM's SharedMemory does, so the header bytes match what its clients expect.
 */
function initSharedMutex(mapping: Mapping, what: string): void {
  const c = libc();
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

/** Throws unless the buffer file open at `fd` holds exactly `count` doubles after its header. */
export function checkBufferSize(fd: number, path: string, count: number): void {
  const size = fstatSync(fd).size;
  if (size !== bufferBytes(count)) {
    throw new JoulegateError(
      `batch buffer ${path} holds ${(size - HEADER_BYTES) / 8} values, expected ${count}`,
    );
  }
}

/**
 * N doubles shared between the batch server and its client through a mmap'd file. `values` is
 * a Float64Array directly over the mapping: writes by one side are seen by the other without
 * any copy or system call.
 */
export class SharedBuffer {
  readonly values: Float64Array;
  private readonly mapping: Mapping;

  private constructor(mapping: Mapping, count: number) {
    this.mapping = mapping;
    this.values = new Float64Array(mapping.bytes, HEADER_BYTES, count);
  }

  /**
   * Server side: creates the file exclusively (a file already there is an error, never reused),
   * mode 0600, owned by the client, sized for `count` doubles and filled with NaN.
   */
  static create(path: string, count: number, owner: { uid: number; gid: number }): SharedBuffer {
    const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      ftruncateSync(fd, bufferBytes(count));
      fchownSync(fd, owner.uid, owner.gid);
      const mapping = mapShared(fd, bufferBytes(count), path);
      initSharedMutex(mapping, path);
      const buffer = new SharedBuffer(mapping, count);
      buffer.values.fill(Number.NaN);
      return buffer;
    } finally {
      closeSync(fd);
    }
  }

  /** Client side: maps an existing buffer and checks it holds exactly `count` doubles. */
  static attach(path: string, count: number): SharedBuffer {
    const fd = openSync(path, constants.O_RDWR);
    try {
      checkBufferSize(fd, path, count);
      return SharedBuffer.map(fd, path, count);
    } finally {
      closeSync(fd);
    }
  }

  /** Client side: maps the buffer file open at `fd`, already checked; the fd may be closed after. */
  static map(fd: number, path: string, count: number): SharedBuffer {
    return new SharedBuffer(mapShared(fd, bufferBytes(count), path), count);
  }

  /** The mapping's address (its header first), for native code that stores into the values. */
  get address(): unknown {
    return this.mapping.pointer;
  }

  close(): void {
    this.mapping.unmap();
  }
}
