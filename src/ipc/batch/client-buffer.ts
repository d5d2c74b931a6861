import { closeSync, constants, openSync, readSync, writeSync } from 'node:fs';
import { JoulegateError } from '../../platform/errors.js';
import { HEADER_BYTES } from './protocol.js';
import { checkBufferSize, SharedBuffer } from './shared-buffer.js';

/**
 * A batch client's side of one shared buffer. It starts as a copy of the values: read from the
 * file (pread) once the server has answered a batch read, written to it (pwrite) before a batch
 * write. Linux keeps one page cache per file, so these calls and the server's mapping see the
 * same bytes, and the one-byte FIFO messages order them. map() maps the file instead (koffi,
 * which costs a process about 20 ms to load): `values` is then the shared memory itself and
 * load() and store() do nothing.
 */
export class ClientBuffer {
  /** The values, in request order: a copy until map(), then a view on the mapping. */
  values: Float64Array;
  /** The open buffer file while the values are a copy. */
  private fd: number | undefined;
  private mapped: SharedBuffer | undefined;

  private constructor(
    fd: number,
    private readonly path: string,
    private readonly count: number,
  ) {
    this.fd = fd;
    this.values = new Float64Array(count);
  }

  /** Opens an existing buffer and checks it holds exactly `count` doubles. */
  static open(path: string, count: number): ClientBuffer {
    const fd = openSync(path, constants.O_RDWR);
    try {
      checkBufferSize(fd, path, count);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    return new ClientBuffer(fd, path, count);
  }

  private bytes(): Uint8Array {
    return new Uint8Array(this.values.buffer, this.values.byteOffset, this.values.byteLength);
  }

  /** Copies the file's values into `values` (nothing to do once mapped). */
  load(): void {
    if (this.fd === undefined) return;
    const bytes = this.bytes();
    for (let done = 0; done < bytes.length; ) {
      const n = readSync(this.fd, bytes, done, bytes.length - done, HEADER_BYTES + done);
      if (n === 0) {
        throw new JoulegateError(
          `batch buffer ${this.path} ends after ${Math.floor(done / 8)} of its ${this.count} values`,
        );
      }
      done += n;
    }
  }

  /** Copies `values` into the file (nothing to do once mapped). */
  store(): void {
    if (this.fd === undefined) return;
    const bytes = this.bytes();
    for (let done = 0; done < bytes.length; )
      done += writeSync(this.fd, bytes, done, bytes.length - done, HEADER_BYTES + done);
  }

  /**
   * Maps the file; from here on `values` is the shared memory. With `keep`, the copy's values
   * are written into it first (settings made since the last store()). A failure leaves the copy.
   */
  map(keep: boolean): void {
    if (this.fd === undefined) return;
    const mapped = SharedBuffer.map(this.fd, this.path, this.count);
    if (keep) mapped.values.set(this.values);
    closeSync(this.fd);
    this.fd = undefined;
    this.mapped = mapped;
    this.values = mapped.values;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.mapped?.close();
  }
}
