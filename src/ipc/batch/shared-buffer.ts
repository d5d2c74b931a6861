import { closeSync, constants, fchownSync, fstatSync, ftruncateSync, openSync } from 'node:fs';
import { endianness } from 'node:os';
import { JoulegateError } from '../../platform/errors.js';
import { initSharedMutex, type Mapping, mapShared } from '../../platform/libc.js';
import { bufferBytes, HEADER_BYTES } from './protocol.js';

if (endianness() !== 'LE') {
  // The wire format is little-endian doubles and Float64Array uses the host's byte order.
  throw new Error('the batch protocol needs a little-endian host');
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
      const size = fstatSync(fd).size;
      if (size !== bufferBytes(count)) {
        throw new JoulegateError(
          `batch buffer ${path} holds ${(size - HEADER_BYTES) / 8} values, expected ${count}`,
        );
      }
      return new SharedBuffer(mapShared(fd, size, path), count);
    } finally {
      closeSync(fd);
    }
  }

  close(): void {
    this.mapping.unmap();
  }
}
