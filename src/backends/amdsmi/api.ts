import type { VendorLibrarySpec } from '../vendor-library.js';

/*
 * Values from amdsmi.h (AMD SMI lib 26.x) that the AMDSMI backend needs without loading the
 * library: ffi.ts, which loads koffi, is imported only once the amdgpu driver is known to be
 * present.
 */

export const AMDSMI_LIBRARY: VendorLibrarySpec = {
  soname: 'libamd_smi.so',
  envVar: 'JOULEGATE_AMDSMI_LIB',
  hint: 'ROCm / AMD SMI not installed?',
  driver: 'amdgpu',
  // The kernel module and the ROCm compute device it creates.
  driverPaths: ['/sys/module/amdgpu', '/dev/kfd'],
};

/** amdsmi_status_t values used here. */
export const AmdSmiStatus = { SUCCESS: 0, INVAL: 1, NOT_SUPPORTED: 2, NO_PERM: 10 } as const;
/** amdsmi_clk_type_t */
export const AmdSmiClock = { SYS: 0, MEM: 4 } as const;
/** amdsmi_temperature_type_t */
export const AmdSmiTemperature = { EDGE: 0, HOTSPOT: 1 } as const;
/** Value the library puts in unsupported 32-bit members. */
export const AMDSMI_U32_UNSUPPORTED = 0xffffffff;

/** An amdsmi_processor_handle (koffi 3 gives pointers as BigInt). */
export type AmdSmiProcessor = bigint;
