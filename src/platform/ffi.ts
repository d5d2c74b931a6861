import { createRequire } from 'node:module';
import type koffiModule from 'koffi';

export type Koffi = typeof koffiModule;
let koffi: Koffi | undefined;

/**
 * koffi, loaded on first use. Its native addon costs every process that imports it about
 * 15–25 ms, and most `joulegate` runs (a monitor on a node without GPUs, a read of sysfs
 * signals) never call a C function.
 */
export function loadKoffi(): Koffi {
  koffi ??= createRequire(import.meta.url)('koffi') as Koffi;
  return koffi;
}
