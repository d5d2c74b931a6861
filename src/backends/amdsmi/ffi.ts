import type { LibraryHandle, TypeObject } from 'koffi';
import { loadKoffi } from '../../platform/ffi.js';
import { cString, toNumber, VendorLibrary } from '../vendor-library.js';
import { AMDSMI_LIBRARY, AMDSMI_U32_UNSUPPORTED, type AmdSmiProcessor, AmdSmiStatus } from './api.js';

const koffi = loadKoffi();

/*
 * FFI declarations for libamd_smi (amdsmi.h of AMD SMI lib version 26.x, ROCm/amdsmi
 * include/amd_smi/amdsmi.h; ROCm 7). Only what the AMDSMI backend uses. Struct layouts follow
 * that header: amdsmi_power_info_t gained 64-bit fields in 26.x, so older libraries (6.x) are
 * not ABI-compatible with these declarations.
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
const PowerInfo = koffi.struct({
  socket_power: 'uint64_t',
  current_socket_power: 'uint32_t',
  average_socket_power: 'uint32_t',
  gfx_voltage: 'uint64_t',
  soc_voltage: 'uint64_t',
  mem_voltage: 'uint64_t',
  power_limit: 'uint32_t',
  reserved: koffi.array('uint64_t', 18),
});
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

/**
 * Every type passed to or from AMD SMI, by its amdsmi.h name: test/backends/ffi-layout.test.ts
 * checks each size and member offset against the C compiler's view of the header's declarations.
 */
export const AMDSMI_TYPES = {
  amdsmi_status_t: Status,
  amdsmi_processor_handle: Handle,
  amdsmi_socket_handle: Handle,
  amdsmi_bdf_t: Bdf,
  amdsmi_clk_type_t: Enum,
  amdsmi_temperature_type_t: Enum,
  amdsmi_temperature_metric_t: Enum,
  amdsmi_memory_type_t: Enum,
  amdsmi_power_info_t: PowerInfo,
  amdsmi_engine_usage_t: EngineUsage,
  amdsmi_clk_info_t: ClkInfo,
  amdsmi_power_cap_info_t: PowerCapInfo,
} as const;

const outU32 = koffi.out(koffi.pointer('uint32_t'));
const outU64 = koffi.out(koffi.pointer('uint64_t'));
const out = (t: TypeObject) => koffi.out(koffi.pointer(t));

function declare(lib: LibraryHandle) {
  const f = (name: string, args: unknown[]) => lib.func(name, Status, args as never);
  return {
    init: f('amdsmi_init', ['uint64_t']),
    shutDown: f('amdsmi_shut_down', []),
    statusString: f('amdsmi_status_code_to_string', [Status, koffi.out(koffi.pointer('const char *'))]),
    getSockets: f('amdsmi_get_socket_handles', [koffi.inout(koffi.pointer('uint32_t')), 'void *']),
    getProcessors: f('amdsmi_get_processor_handles', [
      Handle,
      koffi.inout(koffi.pointer('uint32_t')),
      'void *',
    ]),
    getUuid: f('amdsmi_get_gpu_device_uuid', [Handle, koffi.inout(koffi.pointer('unsigned int')), 'void *']),
    getBdf: f('amdsmi_get_gpu_device_bdf', [Handle, out(Bdf)]),
    getNumaNode: f('amdsmi_topo_get_numa_node_number', [Handle, outU32]),
    getPowerInfo: f('amdsmi_get_power_info', [Handle, out(PowerInfo)]),
    getEnergyCount: f('amdsmi_get_energy_count', [Handle, outU64, koffi.out(koffi.pointer('float')), outU64]),
    getActivity: f('amdsmi_get_gpu_activity', [Handle, out(EngineUsage)]),
    getMemoryTotal: f('amdsmi_get_gpu_memory_total', [Handle, Enum, outU64]),
    getMemoryUsage: f('amdsmi_get_gpu_memory_usage', [Handle, Enum, outU64]),
    getClockInfo: f('amdsmi_get_clock_info', [Handle, Enum, out(ClkInfo)]),
    getTempMetric: f('amdsmi_get_temp_metric', [Handle, Enum, Enum, koffi.out(koffi.pointer('int64_t'))]),
    getPowerCapInfo: f('amdsmi_get_power_cap_info', [Handle, 'uint32_t', out(PowerCapInfo)]),
    setPowerCap: f('amdsmi_set_power_cap', [Handle, 'uint32_t', 'uint64_t']),
  };
}

export interface AmdSmiPowerCap {
  /** All in µW. */
  cap: number;
  defaultCap: number;
  min: number;
  max: number;
}

/** The AMD SMI calls joulegate makes, with units as the library reports them (W, µW, MHz, °C, %). */
export class AmdSmiLibrary extends VendorLibrary {
  private readonly fn: ReturnType<typeof declare>;

  constructor() {
    super(AMDSMI_LIBRARY, {
      success: AmdSmiStatus.SUCCESS,
      notSupported: AmdSmiStatus.NOT_SUPPORTED,
      noPermission: AmdSmiStatus.NO_PERM,
      permissionHint: 'changing GPU settings needs root (write access to the amdgpu sysfs files)',
    });
    this.fn = declare(this.lib);
  }

  protected describeStatus(status: number): string {
    const text: (string | null)[] = [null];
    return this.fn.statusString(status, text) === 0 && text[0] ? text[0] : 'unknown status';
  }

  init(): void {
    this.check('amdsmi_init', this.fn.init(AMDSMI_INIT_AMD_GPUS));
  }

  shutDown(): void {
    this.check('amdsmi_shut_down', this.fn.shutDown());
  }

  /** Handles returned in two calls: the count first (NULL array), then the handles. */
  private handles(name: string, call: (count: number[], buf: Buffer | null) => number): bigint[] {
    const count = [0];
    this.check(name, call(count, null));
    if (count[0] === 0) return [];
    const buf = Buffer.alloc(count[0]! * 8);
    this.check(name, call(count, buf));
    return Array.from({ length: count[0]! }, (_, i) => buf.readBigUInt64LE(i * 8));
  }

  /** Every GPU processor handle, socket by socket. */
  processors(): AmdSmiProcessor[] {
    const sockets = this.handles('amdsmi_get_socket_handles', (c, b) => this.fn.getSockets(c, b));
    return sockets.flatMap((s) =>
      this.handles('amdsmi_get_processor_handles', (c, b) => this.fn.getProcessors(s, c, b)),
    );
  }

  uuid(dev: AmdSmiProcessor): string {
    const buf = Buffer.alloc(AMDSMI_GPU_UUID_SIZE + 1);
    const length = [buf.length];
    this.check('amdsmi_get_gpu_device_uuid', this.fn.getUuid(dev, length, buf));
    return cString(buf);
  }

  /** PCI address as "dddd:bb:dd.f" from the amdsmi_bdf_t bit fields. */
  pciBusId(dev: AmdSmiProcessor): string {
    const raw = [0n];
    this.check('amdsmi_get_gpu_device_bdf', this.fn.getBdf(dev, raw));
    const v = BigInt(raw[0]!);
    const hex = (x: bigint, w: number) => x.toString(16).padStart(w, '0');
    return `${hex(v >> 16n, 4)}:${hex((v >> 8n) & 0xffn, 2)}:${hex((v >> 3n) & 0x1fn, 2)}.${v & 7n}`;
  }

  numaNode(dev: AmdSmiProcessor): number {
    const node = [0];
    this.check('amdsmi_topo_get_numa_node_number', this.fn.getNumaNode(dev, node));
    return node[0]!;
  }

  /** Socket power in W: the average where the part reports one, else the current value (MI300). */
  socketPower(dev: AmdSmiProcessor): number {
    const info = { average_socket_power: 0, current_socket_power: 0 };
    this.check('amdsmi_get_power_info', this.fn.getPowerInfo(dev, info));
    const avg = info.average_socket_power;
    return avg !== AMDSMI_U32_UNSUPPORTED ? avg : info.current_socket_power;
  }

  /** Energy counter in µJ (accumulator × resolution) and the library's timestamp in ns. */
  energy(dev: AmdSmiProcessor): { microjoules: number; timestampNs: number } {
    const acc = [0];
    const res = [0];
    const ts = [0];
    this.check('amdsmi_get_energy_count', this.fn.getEnergyCount(dev, acc, res, ts));
    return { microjoules: toNumber(acc[0]!) * res[0]!, timestampNs: toNumber(ts[0]!) };
  }

  activity(dev: AmdSmiProcessor): { gfx: number; umc: number } {
    const info = { gfx_activity: 0, umc_activity: 0 };
    this.check('amdsmi_get_gpu_activity', this.fn.getActivity(dev, info));
    return { gfx: info.gfx_activity, umc: info.umc_activity };
  }

  vramTotal(dev: AmdSmiProcessor): number {
    const v = [0];
    this.check('amdsmi_get_gpu_memory_total', this.fn.getMemoryTotal(dev, AMDSMI_MEM_TYPE_VRAM, v));
    return toNumber(v[0]!);
  }

  vramUsed(dev: AmdSmiProcessor): number {
    const v = [0];
    this.check('amdsmi_get_gpu_memory_usage', this.fn.getMemoryUsage(dev, AMDSMI_MEM_TYPE_VRAM, v));
    return toNumber(v[0]!);
  }

  /** Current clock of one domain in MHz. */
  clock(dev: AmdSmiProcessor, type: number): number {
    const info = { clk: 0 };
    this.check('amdsmi_get_clock_info', this.fn.getClockInfo(dev, type, info));
    return info.clk;
  }

  temperature(dev: AmdSmiProcessor, sensor: number): number {
    const t = [0];
    this.check('amdsmi_get_temp_metric', this.fn.getTempMetric(dev, sensor, AMDSMI_TEMP_CURRENT, t));
    return toNumber(t[0]!);
  }

  powerCap(dev: AmdSmiProcessor): AmdSmiPowerCap {
    const info = { power_cap: 0, default_power_cap: 0, min_power_cap: 0, max_power_cap: 0 };
    this.check('amdsmi_get_power_cap_info', this.fn.getPowerCapInfo(dev, POWER_CAP_SENSOR, info));
    return {
      cap: toNumber(info.power_cap),
      defaultCap: toNumber(info.default_power_cap),
      min: toNumber(info.min_power_cap),
      max: toNumber(info.max_power_cap),
    };
  }

  setPowerCap(dev: AmdSmiProcessor, microwatts: number): void {
    this.check('amdsmi_set_power_cap', this.fn.setPowerCap(dev, POWER_CAP_SENSOR, microwatts));
  }
}
