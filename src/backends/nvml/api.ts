import type { VendorLibrarySpec } from '../vendor-library.js';

/*
 * Values from nvml.h (NVML API 12 and 13) that the NVML backend needs without loading the library:
 * ffi.ts, which loads koffi, is imported only once the NVIDIA driver is known to be present.
 */

export const NVML_LIBRARY: VendorLibrarySpec = {
  soname: 'libnvidia-ml.so.1',
  envVar: 'JOULEGATE_NVML_LIB',
  hint: 'NVIDIA user-space driver not installed?',
  driver: 'NVIDIA',
  // The kernel module's procfs entry, its control device, and WSL2's GPU device.
  driverPaths: ['/proc/driver/nvidia', '/dev/nvidiactl', '/dev/dxg'],
};

/** nvmlReturn_t values used here. */
export const NvmlReturn = {
  SUCCESS: 0,
  UNINITIALIZED: 1,
  INVALID_ARGUMENT: 2,
  NOT_SUPPORTED: 3,
  NO_PERMISSION: 4,
  NOT_FOUND: 6,
  INSUFFICIENT_SIZE: 7,
} as const;

/** nvmlClockType_t */
export const NvmlClock = { GRAPHICS: 0, SM: 1, MEM: 2, VIDEO: 3 } as const;
/** nvmlTemperatureSensors_t */
export const NVML_TEMPERATURE_GPU = 0;
/** nvmlPcieUtilCounter_t */
export const NvmlPcieCounter = { TX_BYTES: 0, RX_BYTES: 1 } as const;

/** An nvmlDevice_t (koffi 3 gives pointers as BigInt). */
export type NvmlDevice = bigint;
