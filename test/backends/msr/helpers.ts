import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { MsrDevice } from '../../../src/backends/msr/device.js';

/** Writes one register into a sparse /dev/cpu/N/msr file at its offset (8 bytes, little endian). */
export function putMsr(root: string, cpu: number, offset: number, value: bigint): void {
  const dir = join(root, 'dev/cpu', String(cpu));
  mkdirSync(dir, { recursive: true });
  const fd = openSync(join(dir, 'msr'), 'a+');
  closeSync(fd);
  const w = openSync(join(dir, 'msr'), 'r+');
  const buf = Buffer.alloc(8);
  buf.writeBigUInt64LE(value);
  writeSync(w, buf, 0, 8, offset);
  closeSync(w);
}

/**
 * Registers in memory, for tests of registers closer than 8 bytes apart (0x610/0x611, 0xE7/0xE8,
 * AMD's 0xC0010299..0xC001029B): one sparse file cannot hold both, since each pread covers 8.
 */
export class MapMsrDevice implements MsrDevice {
  readonly values = new Map<string, bigint>();
  writes = 0;
  set(cpu: number, offset: number, value: bigint): void {
    this.values.set(`${cpu}:${offset}`, value);
  }
  get(cpu: number, offset: number): bigint | undefined {
    return this.values.get(`${cpu}:${offset}`);
  }
  read(cpu: number, offset: number): bigint {
    const v = this.get(cpu, offset);
    if (v === undefined) throw new Error(`MSR 0x${offset.toString(16)} on CPU ${cpu}: EIO`);
    return v;
  }
  write(cpu: number, offset: number, value: bigint): void {
    this.writes++;
    this.set(cpu, offset, value);
  }
  close(): void {}
}

/** Plausible Intel server values (PU=3: 1/8 W, ESU=14: 61 µJ, TU=10: 976 µs). */
export const INTEL = {
  RAPL_POWER_UNIT: 0x000a0e03n,
  PKG_POWER_LIMIT: 0x00428630_00158528n, // PL1 165 W enabled+clamped over 1 s, PL2 198 W over 2.44 ms
  PKG_ENERGY_STATUS: 0x12345678n,
  PKG_POWER_INFO: 0x00000a50_01e00528n,
  DRAM_ENERGY_STATUS: 0x00abcdefn,
  TEMPERATURE_TARGET: 0x00640000n, // throttles at 100 °C
  PACKAGE_THERM_STATUS: 0x88370000n, // 55 °C below: 45 °C
  PERF_STATUS: 0x1d00n, // ratio 29: 2.9 GHz
};
