import { loadKoffi } from '../../platform/ffi.js';
import { cpusFromMask, cSignatures, cString, toNumber, VendorLibrary } from '../vendor-library.js';
import { NVML_LIBRARY, NVML_TEMPERATURE_GPU, type NvmlDevice, NvmlReturn } from './api.js';

const koffi = loadKoffi();

/*
 * FFI declarations for libnvidia-ml (nvml.h of NVML API 12 and 13; docs/reference/gpu-libraries.md#nvml).
 * Only what the NVML backend uses; signatures, struct layouts and enum values follow the header.
 * Every method checks the nvmlReturn_t and throws (unsupported / permission / other); a method
 * whose function this library lacks throws MissingLibraryFunctionError.
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
 * nvmlTemperature_v1_t, in and out of nvmlDeviceGetTemperatureV: the caller sets the version and
 * the sensor, the library fills in the temperature (signed, °C).
 */
const NvmlTemperature = koffi.struct({
  version: 'unsigned int',
  sensorType: Enum,
  temperature: 'int',
});

/** nvml.h's NVML_STRUCT_VERSION(Temperature, 1): the struct's size with the version in the top byte. */
export const NVML_TEMPERATURE_V1 = (koffi.sizeof(NvmlTemperature) | (1 << 24)) >>> 0;

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
  nvmlTemperature_t: NvmlTemperature,
} as const;

const outU32 = koffi.out(koffi.pointer('unsigned int'));
const outU64 = koffi.out(koffi.pointer('unsigned long long'));

/** Buffer for names and UUIDs (NVML_DEVICE_UUID_V2_BUFFER_SIZE is the same). */
export const NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;

/** What the backend cannot start without: initialisation and finding the devices. */
const REQUIRED = cSignatures({
  nvmlInit_v2: [],
  nvmlShutdown: [],
  nvmlDeviceGetCount_v2: [outU32],
  nvmlDeviceGetHandleByIndex_v2: ['unsigned int', koffi.out(koffi.pointer(DeviceHandle))],
});

/**
 * Everything else, each bound on its own: a library lacking one loses only what it feeds. Where
 * NVML 13 deprecates a call, both it and its successor are here; the successor is used when the
 * library has it.
 */
const OPTIONAL = cSignatures({
  nvmlDeviceGetName: [DeviceHandle, 'void *', 'unsigned int'],
  nvmlDeviceGetUUID: [DeviceHandle, 'void *', 'unsigned int'],
  nvmlDeviceGetPciInfo_v3: [DeviceHandle, koffi.out(koffi.pointer(NvmlPciInfo))],
  nvmlDeviceGetCpuAffinity: [DeviceHandle, 'unsigned int', 'void *'],
  nvmlDeviceGetPowerUsage: [DeviceHandle, outU32],
  nvmlDeviceGetTotalEnergyConsumption: [DeviceHandle, outU64],
  nvmlDeviceGetUtilizationRates: [DeviceHandle, koffi.out(koffi.pointer(NvmlUtilization))],
  nvmlDeviceGetMemoryInfo: [DeviceHandle, koffi.out(koffi.pointer(NvmlMemory))],
  nvmlDeviceGetClockInfo: [DeviceHandle, Enum, outU32],
  nvmlDeviceGetMaxClockInfo: [DeviceHandle, Enum, outU32],
  nvmlDeviceGetTemperatureV: [DeviceHandle, koffi.inout(koffi.pointer(NvmlTemperature))],
  nvmlDeviceGetTemperature: [DeviceHandle, Enum, outU32],
  nvmlDeviceGetPowerManagementLimitConstraints: [DeviceHandle, outU32, outU32],
  nvmlDeviceGetPowerManagementDefaultLimit: [DeviceHandle, outU32],
  nvmlDeviceGetPowerManagementLimit: [DeviceHandle, outU32],
  nvmlDeviceSetPowerManagementLimit: [DeviceHandle, 'unsigned int'],
  nvmlDeviceGetCurrentClocksEventReasons: [DeviceHandle, outU64],
  nvmlDeviceGetCurrentClocksThrottleReasons: [DeviceHandle, outU64],
  nvmlDeviceGetPcieThroughput: [DeviceHandle, Enum, outU32],
  nvmlDeviceSetGpuLockedClocks: [DeviceHandle, 'unsigned int', 'unsigned int'],
  nvmlDeviceResetGpuLockedClocks: [DeviceHandle],
  nvmlDeviceGetMinorNumber: [DeviceHandle, outU32],
  nvmlDeviceGetProcessUtilization: [DeviceHandle, 'void *', outU32, 'unsigned long long'],
});

/** The NVML functions joulegate calls, by C name. */
export type NvmlCall = keyof typeof REQUIRED | keyof typeof OPTIONAL | 'nvmlErrorString';

/** The NVML calls joulegate makes, with units as NVML reports them (mW, mJ, MHz, KB/s, %). */
export class NvmlLibrary extends VendorLibrary<NvmlCall> {
  constructor() {
    super(NVML_LIBRARY, {
      success: NvmlReturn.SUCCESS,
      notSupported: NvmlReturn.NOT_SUPPORTED,
      noPermission: NvmlReturn.NO_PERMISSION,
      permissionHint: 'changing GPU settings needs root (or CAP_SYS_ADMIN)',
    });
    this.bindFunctions(Enum, REQUIRED, OPTIONAL);
    this.bindFunctions('const char *', {}, { nvmlErrorString: [Enum] });
  }

  protected describeStatus(status: number): string {
    if (!this.has('nvmlErrorString')) return `no text (${this.library} lacks nvmlErrorString)`;
    return this.invoke<string>('nvmlErrorString', status);
  }

  /** A call whose last argument is one number written through an out pointer. */
  private scalar(name: NvmlCall, ...args: unknown[]): number {
    const out = [0];
    this.call(name, ...args, out);
    return toNumber(out[0]!);
  }

  init(): void {
    this.call('nvmlInit_v2');
  }

  shutDown(): void {
    this.call('nvmlShutdown');
  }

  deviceCount(): number {
    return this.scalar('nvmlDeviceGetCount_v2');
  }

  device(index: number): NvmlDevice {
    const out: (bigint | null)[] = [null];
    this.call('nvmlDeviceGetHandleByIndex_v2', index, out);
    return out[0] as bigint;
  }

  private string(name: NvmlCall, dev: NvmlDevice): string {
    const buf = Buffer.alloc(NVML_DEVICE_NAME_V2_BUFFER_SIZE);
    this.call(name, dev, buf, buf.length);
    return cString(buf);
  }

  name(dev: NvmlDevice): string {
    return this.string('nvmlDeviceGetName', dev);
  }

  uuid(dev: NvmlDevice): string {
    return this.string('nvmlDeviceGetUUID', dev);
  }

  pciBusId(dev: NvmlDevice): string {
    const info: { busId?: string | number[] } = {};
    this.call('nvmlDeviceGetPciInfo_v3', dev, info);
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
    this.call('nvmlDeviceGetCpuAffinity', dev, words, buf);
    return cpusFromMask(buf);
  }

  powerUsage(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetPowerUsage', dev);
  }

  totalEnergy(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetTotalEnergyConsumption', dev);
  }

  utilization(dev: NvmlDevice): { gpu: number; memory: number } {
    const out = { gpu: 0, memory: 0 };
    this.call('nvmlDeviceGetUtilizationRates', dev, out);
    return out;
  }

  memory(dev: NvmlDevice): { total: number; free: number; used: number } {
    const out = { total: 0, free: 0, used: 0 };
    this.call('nvmlDeviceGetMemoryInfo', dev, out);
    return { total: toNumber(out.total), free: toNumber(out.free), used: toNumber(out.used) };
  }

  clock(dev: NvmlDevice, type: number): number {
    return this.scalar('nvmlDeviceGetClockInfo', dev, type);
  }

  maxClock(dev: NvmlDevice, type: number): number {
    return this.scalar('nvmlDeviceGetMaxClockInfo', dev, type);
  }

  /** GPU die temperature, °C: nvmlDeviceGetTemperatureV where the library has it (NVML 13 deprecates the other). */
  temperature(dev: NvmlDevice): number {
    const name = this.firstPresent('nvmlDeviceGetTemperatureV', 'nvmlDeviceGetTemperature');
    if (name === 'nvmlDeviceGetTemperature') return this.scalar(name, dev, NVML_TEMPERATURE_GPU);
    const request = { version: NVML_TEMPERATURE_V1, sensorType: NVML_TEMPERATURE_GPU, temperature: 0 };
    this.call(name, dev, request);
    return request.temperature;
  }

  powerLimitConstraints(dev: NvmlDevice): { min: number; max: number } {
    const min = [0];
    const max = [0];
    this.call('nvmlDeviceGetPowerManagementLimitConstraints', dev, min, max);
    return { min: min[0]!, max: max[0]! };
  }

  powerLimitDefault(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetPowerManagementDefaultLimit', dev);
  }

  powerLimit(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetPowerManagementLimit', dev);
  }

  setPowerLimit(dev: NvmlDevice, milliwatts: number): void {
    this.call('nvmlDeviceSetPowerManagementLimit', dev, milliwatts);
  }

  /**
   * Bit mask of why clocks are held down: nvmlDeviceGetCurrentClocksEventReasons where the
   * library has it (the same bits under NVML 13's name), else the deprecated throttle call.
   */
  throttleReasons(dev: NvmlDevice): number {
    return this.scalar(
      this.firstPresent(
        'nvmlDeviceGetCurrentClocksEventReasons',
        'nvmlDeviceGetCurrentClocksThrottleReasons',
      ),
      dev,
    );
  }

  pcieThroughput(dev: NvmlDevice, counter: number): number {
    return this.scalar('nvmlDeviceGetPcieThroughput', dev, counter);
  }

  setLockedClocks(dev: NvmlDevice, minMHz: number, maxMHz: number): void {
    this.call('nvmlDeviceSetGpuLockedClocks', dev, minMHz, maxMHz);
  }

  resetLockedClocks(dev: NvmlDevice): void {
    this.call('nvmlDeviceResetGpuLockedClocks', dev);
  }

  /** The device's minor number: it is /dev/nvidia<minor>, as cgroup device rules name it. */
  minorNumber(dev: NvmlDevice): number {
    return this.scalar('nvmlDeviceGetMinorNumber', dev);
  }

  /**
   * Per-process utilisation samples newer than `sinceUs` (a CPU timestamp, µs): one per process
   * that used the GPU in the driver's last sample period. None newer is NVML_ERROR_NOT_FOUND,
   * returned here as []. The count is asked first (a NULL buffer), then the samples.
   */
  processUtilization(dev: NvmlDevice, sinceUs: bigint): ProcessUtilizationSample[] {
    const name = 'nvmlDeviceGetProcessUtilization';
    const count = new Uint32Array(1);
    let status = this.invoke(name, dev, null, count, sinceUs);
    if (status === NvmlReturn.NOT_FOUND || (status === NvmlReturn.SUCCESS && count[0] === 0)) return [];
    if (status !== NvmlReturn.INSUFFICIENT_SIZE) this.check(name, status);
    // Processes may start between the two calls: room for a few more.
    const room = count[0]! + 8;
    const size = koffi.sizeof(NvmlProcessUtilizationSample);
    const buf = Buffer.alloc(room * size);
    count[0] = room;
    status = this.invoke(name, dev, buf, count, sinceUs);
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
