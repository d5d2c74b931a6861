import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { ErrorCode, JoulegateError } from '../../platform/errors.js';
import { type Sysroot, wrapIoError } from '../../platform/sysroot.js';

/** 64-bit model-specific registers of one logical CPU, addressed by register offset. */
export interface MsrDevice {
  read(cpu: number, offset: number): bigint;
  write(cpu: number, offset: number, value: bigint): void;
  close(): void;
}

/** Path of CPU `cpu`'s MSR device: msr-safe (allow-listed) when loaded, else the raw msr driver. */
export function msrPath(sysroot: Sysroot, cpu: number): string {
  const safe = `/dev/cpu/${cpu}/msr_safe`;
  return sysroot.exists(safe) ? safe : `/dev/cpu/${cpu}/msr`;
}

/**
 * The kernel's MSR character devices: an 8-byte pread/pwrite at offset = register address.
 * Descriptors stay open; the write descriptor is opened only when something is written.
 */
export class FileMsrDevice implements MsrDevice {
  private readonly readFds = new Map<number, number>();
  private readonly writeFds = new Map<number, number>();
  private readonly buf = Buffer.alloc(8);

  constructor(private readonly sysroot: Sysroot) {}

  private fd(cpu: number, write: boolean): number {
    const fds = write ? this.writeFds : this.readFds;
    let fd = fds.get(cpu);
    if (fd === undefined) {
      const path = msrPath(this.sysroot, cpu);
      try {
        fd = openSync(this.sysroot.path(path), write ? 'r+' : 'r');
      } catch (err) {
        throw wrapIoError(err, path);
      }
      fds.set(cpu, fd);
    }
    return fd;
  }

  read(cpu: number, offset: number): bigint {
    const fd = this.fd(cpu, false);
    let n: number;
    try {
      n = readSync(fd, this.buf, 0, 8, offset);
    } catch (err) {
      throw wrapIoError(err, `MSR 0x${offset.toString(16)} on CPU ${cpu}`);
    }
    if (n !== 8)
      throw new JoulegateError(
        `MSR 0x${offset.toString(16)} on CPU ${cpu}: short read (${n} of 8 bytes)`,
        ErrorCode.MsrRead,
      );
    return this.buf.readBigUInt64LE(0);
  }

  write(cpu: number, offset: number, value: bigint): void {
    const fd = this.fd(cpu, true);
    const out = Buffer.alloc(8);
    out.writeBigUInt64LE(BigInt.asUintN(64, value), 0);
    let n: number;
    try {
      n = writeSync(fd, out, 0, 8, offset);
    } catch (err) {
      throw wrapIoError(err, `MSR 0x${offset.toString(16)} on CPU ${cpu}`);
    }
    if (n !== 8)
      throw new JoulegateError(`MSR 0x${offset.toString(16)} on CPU ${cpu}: short write`, ErrorCode.MsrWrite);
  }

  close(): void {
    for (const fds of [this.readFds, this.writeFds]) {
      for (const fd of fds.values()) {
        try {
          closeSync(fd);
        } catch {
          // the CPU went offline and took its device with it; nothing left to release
        }
      }
      fds.clear();
    }
  }
}
