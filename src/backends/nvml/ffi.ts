import type { LibraryHandle } from 'koffi';
import { loadKoffi } from '../../platform/ffi.js';
import { cpusFromMask, cString, toNumber, VendorLibrary } from '../vendor-library.js';
import { NVML_LIBRARY, NVML_TEMPERATURE_GPU, type NvmlDevice, NvmlReturn } from './api.js';

const koffi = loadKoffi();

/*
 * FFI declarations for libnvidia-ml (nvml.h, NVML API 12 as shipped with CUDA 12.x drivers).
 * Only what the NVML backend uses; signatures, struct layouts and enum values follow the header.
 * Every method checks the nvmlReturn_t and throws (unsupported / permission / other).
 */

const DeviceHandle = koffi.pointer(koffi.opaque());
/** nvmlReturn_t and the enum parameters: C enums, int-sized. */
const Enum = koffi.type('int');
const NvmlUtilization = koffi.struct({ gpu: 'unsigned int', memory: 'unsigned int' });
const NvmlMemory = koffi.struct({
  total: 'unsigned long long',
  free: 'unsigned long long',
  used: 'unsigned long long',
});
/** nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3. */
const NvmlPciInfo = koffi.struct({
  busIdLegacy: koffi.array('char', 16),
  domain: 'unsigned int',
  bus: 'unsigned int',
  device: 'unsigned int',
  pciDeviceId: 'unsigned int',
  pciSubSystemId: 'unsigned int',
  busId: koffi.array('char', 32),
});

/** nvmlProcessUtilizationSample_t: one process's utilisation in the last sample period. */
const NvmlProcessUtilizationSample = koffi.struct({
  pid: 'unsigned int',
  timeStamp: 'unsigned long long',
  smUtil: 'unsigned int',
  memUtil: 'unsigned int',
  encUtil: 'unsigned int',
  decUtil: 'unsigned int',
});

/**
 * Every type passed to or from NVML, by its nvml.h name: test/backends/ffi-layout.test.ts checks
 * each size and member offset against the C compiler's view of the header's declarations.
 */
export const NVML_TYPES = {
  nvmlReturn_t: Enum,
  nvmlDevice_t: DeviceHandle,
  nvmlClockType_t: Enum,
  nvmlTemperatureSensors_t: Enum,
  nvmlPcieUtilCounter_t: Enum,
  nvmlUtilization_t: NvmlUtilization,
  nvmlMemory_t: NvmlMemory,
  nvmlPciInfo_t: NvmlPciInfo,
  nvmlProcessUtilizationSample_t: NvmlProcessUtilizationSample,
} as const;

const outU32 = koffi.out(koffi.pointer('unsigned int'));
const outU64 = koffi.out(koffi.pointer('unsigned long long'));

/** Buffer for names and UUIDs (NVML_DEVICE_UUID_V2_BUFFER_SIZE is the same). */
export const NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;

function declare(lib: LibraryHandle) {
  const f = (name: string, args: unknown[]) => lib.func(name, Enum, args as never);
  return {
    init: f('nvmlInit_v2', []),
    shutdown: f('nvmlShutdown', []),
    errorString: lib.func('nvmlErrorString', 'const char *', [Enum]),
    getCount: f('nvmlDeviceGetCount_v2', [outU32]),
    getHandle: f('nvmlDeviceGetHandleByIndex_v2', ['unsigned int', koffi.out(koffi.pointer(DeviceHandle))]),
    getName: f('nvmlDeviceGetName', [DeviceHandle, 'void *', 'unsigned int']),
    getUuid: f('nvmlDeviceGetUUID', [DeviceHandle, 'void *', 'unsigned int']),
    getPciInfo: f('nvmlDeviceGetPciInfo_v3', [DeviceHandle, koffi.out(koffi.pointer(NvmlPciInfo))]),
    getCpuAffinity: f('nvmlDeviceGetCpuAffinity', [DeviceHandle, 'unsigned int', 'void *']),
    getPowerUsage: f('nvmlDeviceGetPowerUsage', [DeviceHandle, outU32]),
    getTotalEnergy: f('nvmlDeviceGetTotalEnergyConsumption', [DeviceHandle, outU64]),
    getUtilization: f('nvmlDeviceGetUtilizationRates', [
      DeviceHandle,
      koffi.out(koffi.pointer(NvmlUtilization)),
    ]),
    getMemoryInfo: f('nvmlDeviceGetMemoryInfo', [DeviceHandle, koffi.out(koffi.pointer(NvmlMemory))]),
    getClockInfo: f('nvmlDeviceGetClockInfo', [DeviceHandle, Enum, outU32]),
    getMaxClockInfo: f('nvmlDeviceGetMaxClockInfo', [DeviceHandle, Enum, outU32]),
    getTemperature: f('nvmlDeviceGetTemperature', [DeviceHandle, Enum, outU32]),
    getLimitConstraints: f('nvmlDeviceGetPowerManagementLimitConstraints', [DeviceHandle, outU32, outU32]),
    getDefaultLimit: f('nvmlDeviceGetPowerManagementDefaultLimit', [DeviceHandle, outU32]),
    getLimit: f('nvmlDeviceGetPowerManagementLimit', [DeviceHandle, outU32]),
    setLimit: f('nvmlDeviceSetPowerManagementLimit', [DeviceHandle, 'unsigned int']),
    getThrottleReasons: f('nvmlDeviceGetCurrentClocksThrottleReasons', [DeviceHandle, outU64]),
    getPcieThroughput: f('nvmlDeviceGetPcieThroughput', [DeviceHandle, Enum, outU32]),
    setLockedClocks: f('nvmlDeviceSetGpuLockedClocks', [DeviceHandle, 'unsigned int', 'unsigned int']),
    resetLockedClocks: f('nvmlDeviceResetGpuLockedClocks', [DeviceHandle]),
    getMinorNumber: f('nvmlDeviceGetMinorNumber', [DeviceHandle, outU32]),
    getProcessUtilization: f('nvmlDeviceGetProcessUtilization', [
      DeviceHandle,
      'void *',
      outU32,
      'unsigned long long',
    ]),
  };
}

/** The NVML calls joulegate makes, with units as NVML reports them (mW, mJ, MHz, KB/s, %). */
export class NvmlLibrary extends VendorLibrary {
  private readonly fn: ReturnType<typeof declare>;

  constructor() {
    super(NVML_LIBRARY, {
      success: NvmlReturn.SUCCESS,
      notSupported: NvmlReturn.NOT_SUPPORTED,
      noPermission: NvmlReturn.NO_PERMISSION,
      permissionHint: 'changing GPU settings needs root (or CAP_SYS_ADMIN)',
    });
    this.fn = declare(this.lib);
  }

  protected describeStatus(status: number): string {
    return String(this.fn.errorString(status));
  }

  /** One call returning one unsigned int through an out pointer. */
  private scalar(name: string, call: (out: number[]) => number): number {
    const out = [0];
    this.check(name, call(out));
    return toNumber(out[0]!);
  }

  init(): void {
    this.check('nvmlInit_v2', this.fn.init());
  }

  shutDown(): void {
    this.check('nvmlShutdown', this.fn.shutdown());
  }

  deviceCount(): number {
    return this.scalar('nvmlDeviceGetCount_v2', (out) => this.fn.getCount(out));
  }

  device(index: number): NvmlDevice {
    const out: (bigint | null)[] = [null];
    this.check('nvmlDeviceGetHandleByIndex_v2', this.fn.getHandle(index, out));
    return out[0] as bigint;
  }

  private string(name: string, call: (buf: Buffer) => number): string {
    const buf = Buffer.alloc(NVML_DEVICE_NAME_V2_BUFFER_SIZE);
    this.check(name, call(buf));
    return cString(buf);
  }

  name(dev: NvmlDevice): string {
    return this.string('nvmlDeviceGetName', (b) => this.fn.getName(dev, b, b.length));
  }

  uuid(dev: NvmlDevice): string {
    return this.string('nvmlDeviceGetUUID', (b) => this.fn.getUuid(dev, b, b.length));
  }

  pciBusId(dev: NvmlDevice): string {
    const info: { busId?: string | number[] } = {};
    this.check('nvmlDeviceGetPciInfo_v3', this.fn.getPciInfo(dev, info));
    const id = info.busId;
    return typeof id === 'string'
      ? id
      : Buffer.from((id ?? []).map((c) => c & 0xff))
          .toString('utf8')
          .replace(/\0.*$/s, '');
  }

  /** CPUs the device is close to (ideal affinity), for `cpuCount` CPUs. */
  cpuAffinity(dev: NvmlDevice, cpuCount: number): number[] {
    const words = Math.max(1, Math.ceil(cpuCount / 64));
    const buf = Buffer.alloc(words * 8);
    this.check('nvmlDeviceGetCpuAffinity', this.fn.getCpuAffinity(dev, words, buf));
    return cpusFromMask(buf);
  }

  powerUsage(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetPowerUsage', (o) => this.fn.getPowerUsage(dev, o));
  }

  totalEnergy(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetTotalEnergyConsumption', (o) => this.fn.getTotalEnergy(dev, o));
  }

  utilization(dev: NvmlDevice): { gpu: number; memory: number } {
    const out = { gpu: 0, memory: 0 };
    this.check('nvmlDeviceGetUtilizationRates', this.fn.getUtilization(dev, out));
    return out;
  }

  memory(dev: NvmlDevice): { total: number; free: number; used: number } {
    const out = { total: 0, free: 0, used: 0 };
    this.check('nvmlDeviceGetMemoryInfo', this.fn.getMemoryInfo(dev, out));
    return { total: toNumber(out.total), free: toNumber(out.free), used: toNumber(out.used) };
  }

  clock(dev: NvmlDevice, type: number): number {
    return this.scalar('nvmlDeviceGetClockInfo', (o) => this.fn.getClockInfo(dev, type, o));
  }

  maxClock(dev: NvmlDevice, type: number): number {
    return this.scalar('nvmlDeviceGetMaxClockInfo', (o) => this.fn.getMaxClockInfo(dev, type, o));
  }

  temperature(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetTemperature', (o) =>
      this.fn.getTemperature(dev, NVML_TEMPERATURE_GPU, o),
    );
  }

  powerLimitConstraints(dev: NvmlDevice): { min: number; max: number } {
    const min = [0];
    const max = [0];
    this.check('nvmlDeviceGetPowerManagementLimitConstraints', this.fn.getLimitConstraints(dev, min, max));
    return { min: min[0]!, max: max[0]! };
  }

  powerLimitDefault(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetPowerManagementDefaultLimit', (o) => this.fn.getDefaultLimit(dev, o));
  }

  powerLimit(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetPowerManagementLimit', (o) => this.fn.getLimit(dev, o));
  }

  setPowerLimit(dev: NvmlDevice, milliwatts: number): void {
    this.check('nvmlDeviceSetPowerManagementLimit', this.fn.setLimit(dev, milliwatts));
  }

  throttleReasons(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetCurrentClocksThrottleReasons', (o) =>
      this.fn.getThrottleReasons(dev, o),
    );
  }

  pcieThroughput(dev: NvmlDevice, counter: number): number {
    return this.scalar('nvmlDeviceGetPcieThroughput', (o) => this.fn.getPcieThroughput(dev, counter, o));
  }

  setLockedClocks(dev: NvmlDevice, minMHz: number, maxMHz: number): void {
    this.check('nvmlDeviceSetGpuLockedClocks', this.fn.setLockedClocks(dev, minMHz, maxMHz));
  }

  resetLockedClocks(dev: NvmlDevice): void {
    this.check('nvmlDeviceResetGpuLockedClocks', this.fn.resetLockedClocks(dev));
  }

  /** The device's minor number: it is /dev/nvidia<minor>, as cgroup device rules name it. */
  minorNumber(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetMinorNumber', (o) => this.fn.getMinorNumber(dev, o));
  }

  /**
   * Per-process utilisation samples newer than `sinceUs` (a CPU timestamp, µs): one per process
   * that used the GPU in the driver's last sample period. None newer is NVML_ERROR_NOT_FOUND,
   * returned here as []. The count is asked first (a NULL buffer), then the samples.
   */
  processUtilization(dev: NvmlDevice, sinceUs: bigint): ProcessUtilizationSample[] {
    const name = 'nvmlDeviceGetProcessUtilization';
    const count = new Uint32Array(1);
    let status = this.fn.getProcessUtilization(dev, null, count, sinceUs);
    if (status === NvmlReturn.NOT_FOUND || (status === NvmlReturn.SUCCESS && count[0] === 0)) return [];
    if (status !== NvmlReturn.INSUFFICIENT_SIZE) this.check(name, status);
    // Processes may start between the two calls: room for a few more.
    const room = count[0]! + 8;
    const size = koffi.sizeof(NvmlProcessUtilizationSample);
    const buf = Buffer.alloc(room * size);
    count[0] = room;
    status = this.fn.getProcessUtilization(dev, buf, count, sinceUs);
    if (status === NvmlReturn.NOT_FOUND) return [];
    this.check(name, status);
    return Array.from({ length: count[0]! }, (_, i) => {
      const s = koffi.decode(buf, i * size, NvmlProcessUtilizationSample) as {
        pid: number;
        timeStamp: number | bigint;
        smUtil: number;
      };
      return { pid: s.pid, timeStampUs: BigInt(s.timeStamp), smUtil: s.smUtil };
    });
  }
}

export interface ProcessUtilizationSample {
  pid: number;
  /** CPU timestamp of the sample, µs. */
  timeStampUs: bigint;
  /** SM (3D/compute) utilisation of the process in the sample period, %. */
  smUtil: number;
}
