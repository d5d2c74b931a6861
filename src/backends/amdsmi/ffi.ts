import type { TypeObject } from 'koffi';
import { loadKoffi } from '../../platform/ffi.js';
import { BackendUnavailableError } from '../registry.js';
import { cSignatures, cString, toNumber, VendorLibrary } from '../vendor-library.js';
import { AMDSMI_LIBRARY, AMDSMI_U32_UNSUPPORTED, type AmdSmiProcessor, AmdSmiStatus } from './api.js';

const koffi = loadKoffi();

/*
 * FFI declarations for libamd_smi (amdsmi.h of ROCm/amdsmi; docs/reference/gpu-libraries.md#amd-smi).
 * Only what the AMDSMI backend uses. Two library generations lay out their structs differently:
 * lib 24.6/24.7 (ROCm 6.2/6.3) and lib 26.x (ROCm 7). init() reads the library's version and
 * picks that generation's layouts; a library of any other version is refused, never read blind.
 */

/** amdsmi_init_flags_t */
export const AMDSMI_INIT_AMD_GPUS = 1 << 1;
/** amdsmi_temperature_metric_t */
export const AMDSMI_TEMP_CURRENT = 0;
/** amdsmi_memory_type_t */
export const AMDSMI_MEM_TYPE_VRAM = 0;
/** Power cap sensor index (the only one on current GPUs). */
const POWER_CAP_SENSOR = 0;
export const AMDSMI_GPU_UUID_SIZE = 38;

const Handle = koffi.type('void *');
/** The enum parameters: C enums, int-sized. */
const Enum = koffi.type('int');
/** amdsmi_status_t: an enum with values up to 0xFFFFFFFF, so unsigned int-sized. */
const Status = koffi.type('uint32_t');
/** amdsmi_bdf_t: a union of bit fields over one uint64_t (decoded in pciBusId). */
const Bdf = koffi.type('uint64_t');
const EngineUsage = koffi.struct({
  gfx_activity: 'uint32_t',
  umc_activity: 'uint32_t',
  mm_activity: 'uint32_t',
  reserved: koffi.array('uint32_t', 13),
});
const ClkInfo = koffi.struct({
  clk: 'uint32_t',
  min_clk: 'uint32_t',
  max_clk: 'uint32_t',
  clk_locked: 'uint8_t',
  clk_deep_sleep: 'uint8_t',
  reserved: koffi.array('uint32_t', 4),
});
const PowerCapInfo = koffi.struct({
  power_cap: 'uint64_t',
  default_power_cap: 'uint64_t',
  dpm_cap: 'uint64_t',
  min_power_cap: 'uint64_t',
  max_power_cap: 'uint64_t',
  reserved: koffi.array('uint64_t', 3),
});

/** Lib 24.x: the version starts with the year it was released in. */
const Version24 = koffi.struct({
  year: 'uint32_t',
  major: 'uint32_t',
  minor: 'uint32_t',
  release: 'uint32_t',
  build: 'const char *',
});
/** Lib 24.x: every member 32 bits wide. */
const PowerInfo24 = koffi.struct({
  current_socket_power: 'uint32_t',
  average_socket_power: 'uint32_t',
  gfx_voltage: 'uint32_t',
  soc_voltage: 'uint32_t',
  mem_voltage: 'uint32_t',
  power_limit: 'uint32_t',
  reserved: koffi.array('uint32_t', 11),
});
/** Lib 26.x: the year is gone (26.0). */
const Version26 = koffi.struct({
  major: 'uint32_t',
  minor: 'uint32_t',
  release: 'uint32_t',
  build: 'const char *',
});
/** Lib 26.x: socket_power in front, 64-bit voltages. */
const PowerInfo26 = koffi.struct({
  socket_power: 'uint64_t',
  current_socket_power: 'uint32_t',
  average_socket_power: 'uint32_t',
  gfx_voltage: 'uint64_t',
  soc_voltage: 'uint64_t',
  mem_voltage: 'uint64_t',
  power_limit: 'uint32_t',
  reserved: koffi.array('uint64_t', 18),
});

/** The types every generation shares. */
const COMMON_TYPES = {
  amdsmi_status_t: Status,
  amdsmi_processor_handle: Handle,
  amdsmi_socket_handle: Handle,
  amdsmi_bdf_t: Bdf,
  amdsmi_clk_type_t: Enum,
  amdsmi_temperature_type_t: Enum,
  amdsmi_temperature_metric_t: Enum,
  amdsmi_memory_type_t: Enum,
  amdsmi_engine_usage_t: EngineUsage,
  amdsmi_clk_info_t: ClkInfo,
  amdsmi_power_cap_info_t: PowerCapInfo,
};

/** A library generation whose struct layouts joulegate has from its header. */
export type AmdSmiGeneration = 'lib24' | 'lib26';

/**
 * Every type passed to or from AMD SMI, by its amdsmi.h name, per generation:
 * test/backends/ffi-layout.test.ts checks each size and member offset against the C compiler's
 * view of that generation's declarations.
 */
export const AMDSMI_TYPES: Record<
  AmdSmiGeneration,
  typeof COMMON_TYPES & { amdsmi_version_t: TypeObject; amdsmi_power_info_t: TypeObject }
> = {
  lib24: { ...COMMON_TYPES, amdsmi_version_t: Version24, amdsmi_power_info_t: PowerInfo24 },
  lib26: { ...COMMON_TYPES, amdsmi_version_t: Version26, amdsmi_power_info_t: PowerInfo26 },
};

/** The versions whose layouts these are, as the refusal of any other names them. */
const KNOWN_VERSIONS = '24.6.x, 24.7.x (ROCm 6.2, 6.3) and 26.x (ROCm 7)';

/**
 * Room for amdsmi_get_lib_version to write into: more than any amdsmi_version_t so far (24
 * bytes), so that a library with a larger one is refused rather than let write past the buffer.
 */
const VERSION_BUFFER_BYTES = 64;

/**
 * The generation of the library that filled `buf` through amdsmi_get_lib_version, and its
 * version as that generation writes it. Lib 24.x stores year, major, minor, release; 26.x
 * stores major, minor, release. The first word is thus a year (23, 24, 25) or a year-less major
 * (26 on): read as 26.x's major, anything from 26 on is year-less.
 */
function generationOf(buf: Buffer): { version: string; generation?: AmdSmiGeneration } {
  const yearless = koffi.decode(buf, Version26) as { major: number; minor: number; release: number };
  if (yearless.major >= 26) {
    const version = `${yearless.major}.${yearless.minor}.${yearless.release}`;
    return yearless.major === 26 ? { version, generation: 'lib26' } : { version };
  }
  const dated = koffi.decode(buf, Version24) as {
    year: number;
    major: number;
    minor: number;
    release: number;
  };
  const version = `${dated.year}.${dated.major}.${dated.minor}.${dated.release}`;
  const known = dated.year === 24 && (dated.major === 6 || dated.major === 7);
  return known ? { version, generation: 'lib24' } : { version };
}

const outU32 = koffi.out(koffi.pointer('uint32_t'));
const outU64 = koffi.out(koffi.pointer('uint64_t'));
const out = (t: TypeObject) => koffi.out(koffi.pointer(t));

/** What the backend cannot start without: initialisation, the version, finding the GPUs. */
const REQUIRED = cSignatures({
  amdsmi_init: ['uint64_t'],
  amdsmi_shut_down: [],
  amdsmi_get_lib_version: ['void *'],
  amdsmi_get_socket_handles: [koffi.inout(koffi.pointer('uint32_t')), 'void *'],
  amdsmi_get_processor_handles: [Handle, koffi.inout(koffi.pointer('uint32_t')), 'void *'],
});

/** Everything else, each bound on its own: a library lacking one loses only what it feeds. */
const OPTIONAL = cSignatures({
  amdsmi_status_code_to_string: [Status, koffi.out(koffi.pointer('const char *'))],
  amdsmi_get_gpu_device_uuid: [Handle, koffi.inout(koffi.pointer('unsigned int')), 'void *'],
  amdsmi_get_gpu_device_bdf: [Handle, out(Bdf)],
  amdsmi_topo_get_numa_node_number: [Handle, outU32],
  // The struct's layout depends on the generation: a buffer, decoded once the version is known.
  amdsmi_get_power_info: [Handle, 'void *'],
  amdsmi_get_energy_count: [Handle, outU64, koffi.out(koffi.pointer('float')), outU64],
  amdsmi_get_gpu_activity: [Handle, out(EngineUsage)],
  amdsmi_get_gpu_memory_total: [Handle, Enum, outU64],
  amdsmi_get_gpu_memory_usage: [Handle, Enum, outU64],
  amdsmi_get_clock_info: [Handle, Enum, out(ClkInfo)],
  amdsmi_get_temp_metric: [Handle, Enum, Enum, koffi.out(koffi.pointer('int64_t'))],
  amdsmi_get_power_cap_info: [Handle, 'uint32_t', out(PowerCapInfo)],
  amdsmi_set_power_cap: [Handle, 'uint32_t', 'uint64_t'],
});

/** The AMD SMI functions joulegate calls, by C name. */
export type AmdSmiCall = keyof typeof REQUIRED | keyof typeof OPTIONAL;

export interface AmdSmiPowerCap {
  /** All in µW. */
  cap: number;
  defaultCap: number;
  min: number;
  max: number;
}

/** The AMD SMI calls joulegate makes, with units as the library reports them (W, µW, MHz, °C, %). */
export class AmdSmiLibrary extends VendorLibrary<AmdSmiCall> {
  /** The library's version as it reports it and the generation of its layouts (after init). */
  private identity: { version: string; generation: AmdSmiGeneration } | undefined;

  constructor() {
    super(AMDSMI_LIBRARY, {
      success: AmdSmiStatus.SUCCESS,
      notSupported: AmdSmiStatus.NOT_SUPPORTED,
      noPermission: AmdSmiStatus.NO_PERM,
      permissionHint: 'changing GPU settings needs root (write access to the amdgpu sysfs files)',
    });
    this.bindFunctions(Status, REQUIRED, OPTIONAL);
  }

  protected describeStatus(status: number): string {
    if (!this.has('amdsmi_status_code_to_string')) return 'unknown status';
    const text: (string | null)[] = [null];
    return this.invoke('amdsmi_status_code_to_string', status, text) === 0 && text[0]
      ? text[0]
      : 'unknown status';
  }

  /**
   * amdsmi_init, then the version, which decides the struct layouts. A version whose layouts
   * joulegate does not have gives its reference back and makes the backend unavailable.
   */
  init(): void {
    this.call('amdsmi_init', AMDSMI_INIT_AMD_GPUS);
    try {
      this.useLayoutsOfVersion();
    } catch (err) {
      // Setup fails after init: give the reference back.
      this.invoke('amdsmi_shut_down');
      throw err;
    }
  }

  /** Reads the version (lib 24.x answers only once initialised) and picks its generation's layouts. */
  private useLayoutsOfVersion(): void {
    const buf = Buffer.alloc(VERSION_BUFFER_BYTES);
    this.call('amdsmi_get_lib_version', buf);
    const { version, generation } = generationOf(buf);
    if (generation === undefined) {
      throw new BackendUnavailableError(
        `${this.library} version ${version}: joulegate knows the struct layouts of ${KNOWN_VERSIONS} only`,
      );
    }
    this.identity = { version, generation };
  }

  /** The library's version as it reports it (known once init has run). */
  get version(): string | undefined {
    return this.identity?.version;
  }

  shutDown(): void {
    this.call('amdsmi_shut_down');
  }

  /** The struct layouts of the library's generation (known once init has run). */
  private layouts(): (typeof AMDSMI_TYPES)[AmdSmiGeneration] {
    if (this.identity === undefined) throw new Error('AMD SMI used before init');
    return AMDSMI_TYPES[this.identity.generation];
  }

  /** Handles returned in two calls (count and array last): the count first (NULL array), then the handles. */
  private handles(name: AmdSmiCall, ...leading: unknown[]): bigint[] {
    const count = [0];
    this.call(name, ...leading, count, null);
    if (count[0] === 0) return [];
    const buf = Buffer.alloc(count[0]! * 8);
    this.call(name, ...leading, count, buf);
    return Array.from({ length: count[0]! }, (_, i) => buf.readBigUInt64LE(i * 8));
  }

  /** Every GPU processor handle, socket by socket. */
  processors(): AmdSmiProcessor[] {
    return this.handles('amdsmi_get_socket_handles').flatMap((s) =>
      this.handles('amdsmi_get_processor_handles', s),
    );
  }

  uuid(dev: AmdSmiProcessor): string {
    const buf = Buffer.alloc(AMDSMI_GPU_UUID_SIZE + 1);
    const length = [buf.length];
    this.call('amdsmi_get_gpu_device_uuid', dev, length, buf);
    return cString(buf);
  }

  /** PCI address as "dddd:bb:dd.f" from the amdsmi_bdf_t bit fields. */
  pciBusId(dev: AmdSmiProcessor): string {
    const raw = [0n];
    this.call('amdsmi_get_gpu_device_bdf', dev, raw);
    const v = BigInt(raw[0]!);
    const hex = (x: bigint, w: number) => x.toString(16).padStart(w, '0');
    return `${hex(v >> 16n, 4)}:${hex((v >> 8n) & 0xffn, 2)}:${hex((v >> 3n) & 0x1fn, 2)}.${v & 7n}`;
  }

  numaNode(dev: AmdSmiProcessor): number {
    const node = [0];
    this.call('amdsmi_topo_get_numa_node_number', dev, node);
    return node[0]!;
  }

  /** Socket power in W: the average where the part reports one, else the current value (MI300). */
  socketPower(dev: AmdSmiProcessor): number {
    const layout = this.layouts().amdsmi_power_info_t;
    const buf = Buffer.alloc(koffi.sizeof(layout));
    this.call('amdsmi_get_power_info', dev, buf);
    const info = koffi.decode(buf, layout) as { average_socket_power: number; current_socket_power: number };
    const avg = info.average_socket_power;
    return avg !== AMDSMI_U32_UNSUPPORTED ? avg : info.current_socket_power;
  }

  /** Energy counter in µJ (accumulator × resolution) and the library's timestamp in ns. */
  energy(dev: AmdSmiProcessor): { microjoules: number; timestampNs: number } {
    const acc = [0];
    const res = [0];
    const ts = [0];
    this.call('amdsmi_get_energy_count', dev, acc, res, ts);
    return { microjoules: toNumber(acc[0]!) * res[0]!, timestampNs: toNumber(ts[0]!) };
  }

  activity(dev: AmdSmiProcessor): { gfx: number; umc: number } {
    const info = { gfx_activity: 0, umc_activity: 0 };
    this.call('amdsmi_get_gpu_activity', dev, info);
    return { gfx: info.gfx_activity, umc: info.umc_activity };
  }

  vramTotal(dev: AmdSmiProcessor): number {
    const v = [0];
    this.call('amdsmi_get_gpu_memory_total', dev, AMDSMI_MEM_TYPE_VRAM, v);
    return toNumber(v[0]!);
  }

  vramUsed(dev: AmdSmiProcessor): number {
    const v = [0];
    this.call('amdsmi_get_gpu_memory_usage', dev, AMDSMI_MEM_TYPE_VRAM, v);
    return toNumber(v[0]!);
  }

  /** Current clock of one domain in MHz. */
  clock(dev: AmdSmiProcessor, type: number): number {
    const info = { clk: 0 };
    this.call('amdsmi_get_clock_info', dev, type, info);
    return info.clk;
  }

  temperature(dev: AmdSmiProcessor, sensor: number): number {
    const t = [0];
    this.call('amdsmi_get_temp_metric', dev, sensor, AMDSMI_TEMP_CURRENT, t);
    return toNumber(t[0]!);
  }

  powerCap(dev: AmdSmiProcessor): AmdSmiPowerCap {
    const info = { power_cap: 0, default_power_cap: 0, min_power_cap: 0, max_power_cap: 0 };
    this.call('amdsmi_get_power_cap_info', dev, POWER_CAP_SENSOR, info);
    return {
      cap: toNumber(info.power_cap),
      defaultCap: toNumber(info.default_power_cap),
      min: toNumber(info.min_power_cap),
      max: toNumber(info.max_power_cap),
    };
  }

  setPowerCap(dev: AmdSmiProcessor, microwatts: number): void {
    this.call('amdsmi_set_power_cap', dev, POWER_CAP_SENSOR, microwatts);
  }
}
