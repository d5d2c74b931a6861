import { Aggregation } from '../../platform/aggregation.js';
import type { BackendContext } from '../../platform/backend.js';
import { DomainType } from '../../platform/domains.js';
import { InvalidArgumentError } from '../../platform/errors.js';
import { FormatType } from '../../platform/format.js';
import { Behavior, Units } from '../../platform/signal-info.js';
import { type GpuControl, type GpuDevice, type GpuQuery, GpuTableBackend, gpuRow } from '../gpu-table.js';
import { registerBackend } from '../registry.js';
import { requireVendorDriver } from '../vendor-library.js';
import { NVML_LIBRARY, NvmlClock, type NvmlDevice, NvmlPcieCounter } from './api.js';
import type { NvmlCall, NvmlLibrary, ProcessUtilizationSample } from './ffi.js';

const MILLI = 1e-3;
const MEGA = 1e6;

/**
 * Calls that feed no signal but per-process energy attribution (attribution/gpu-use.ts), with
 * what a library lacking one loses: no table row names them, so setup does.
 */
const ATTRIBUTION_CALLS = [
  ['nvmlDeviceGetProcessUtilization', 'per-process GPU attribution unavailable'],
  ['nvmlDeviceGetMinorNumber', "GPUs bound to a job's cgroup not recognised"],
] as const satisfies readonly (readonly [NvmlCall, string])[];

/** A locked-clock range as this process last set it, in MHz; 0 = that bound is not locked. */
interface ClockLock {
  min: number;
  max: number;
}

/**
 * NVIDIA GPUs through NVML. setup() always calls nvmlInit in the current process: NVML state
 * does not survive fork(), and the batch server builds its own PlatformIO in a child process.
 */
export class NvmlBackend extends GpuTableBackend<NvmlDevice, NvmlLibrary> {
  readonly id = 'nvml';
  readonly name = 'NVML';
  readonly description = 'NVIDIA GPUs through the NVIDIA Management Library (libnvidia-ml)';
  private locks = new Map<NvmlDevice, ClockLock>();

  constructor(lib: NvmlLibrary) {
    super(lib);
  }

  protected openDevices(ctx: BackendContext): GpuDevice<NvmlDevice>[] {
    const cpuCount = ctx.topology.numDomain(DomainType.Cpu);
    const devices: GpuDevice<NvmlDevice>[] = [];
    for (let i = 0; i < this.lib.deviceCount(); i++) {
      const handle = this.lib.device(i);
      const affinity = this.unlessLacking('GPU CPU affinity unknown, all CPUs assumed', () =>
        this.lib.cpuAffinity(handle, cpuCount),
      );
      devices.push({
        handle,
        cpus: (affinity ?? ctx.topology.cpusOf(DomainType.Board, 0)).filter((c) => c < cpuCount),
        info: {
          nvmlIndex: i,
          uuid: this.unlessLacking('GPU UUIDs unknown', () => this.lib.uuid(handle)),
          name: this.unlessLacking('GPU names unknown', () => this.lib.name(handle)),
          pciBusId: this.unlessLacking('GPU PCI addresses unknown', () => this.lib.pciBusId(handle)),
        },
      });
      // Locks set by an earlier process are unknown to NVML's API; assume the driver default.
      this.locks.set(handle, { min: 0, max: 0 });
    }
    for (const [fn, lost] of ATTRIBUTION_CALLS) this.unlessLacking(lost, () => this.lib.requireFunctions(fn));
    return devices;
  }

  protected signalTable(): GpuQuery<NvmlDevice>[] {
    const n = this.lib;
    const { Variable, Monotone, Constant } = Behavior;
    const { Sum, Average, Max, IntegerBitwiseOr } = Aggregation;
    return [
      gpuRow(
        'GPU_POWER',
        'GPU_POWER',
        'GPU board power (nvmlDeviceGetPowerUsage; a ~1 s average on Ampere and newer)',
        Units.Watts,
        Variable,
        Sum,
        MILLI,
        (d) => n.powerUsage(d),
      ),
      gpuRow(
        'GPU_ENERGY_CONSUMPTION_TOTAL',
        'GPU_ENERGY',
        'GPU energy since the driver was loaded (nvmlDeviceGetTotalEnergyConsumption, Volta and newer)',
        Units.Joules,
        Monotone,
        Sum,
        MILLI,
        (d) => n.totalEnergy(d),
      ),
      gpuRow(
        'GPU_UTILIZATION',
        'GPU_UTILIZATION',
        'Fraction of the last sample period in which a kernel ran on the GPU',
        Units.None,
        Variable,
        Average,
        0.01,
        (d) => n.utilization(d).gpu,
      ),
      gpuRow(
        'GPU_MEMORY_UTILIZATION',
        undefined,
        'Fraction of the last sample period in which device memory was read or written',
        Units.None,
        Variable,
        Average,
        0.01,
        (d) => n.utilization(d).memory,
      ),
      gpuRow(
        'GPU_MEMORY_USED',
        'GPU_MEMORY_USED',
        'Device memory in use, bytes',
        Units.None,
        Variable,
        Sum,
        1,
        (d) => n.memory(d).used,
      ),
      gpuRow(
        'GPU_MEMORY_TOTAL',
        'GPU_MEMORY_TOTAL',
        'Device memory installed, bytes',
        Units.None,
        Constant,
        Sum,
        1,
        (d) => n.memory(d).total,
      ),
      gpuRow(
        'GPU_CORE_FREQUENCY_STATUS',
        'GPU_CORE_FREQUENCY_STATUS',
        'Current SM clock',
        Units.Hertz,
        Variable,
        Average,
        MEGA,
        (d) => n.clock(d, NvmlClock.SM),
      ),
      gpuRow(
        'GPU_CORE_FREQUENCY_MAX_AVAIL',
        'GPU_CORE_FREQUENCY_MAX_AVAIL',
        'Highest SM clock the device supports',
        Units.Hertz,
        Constant,
        Average,
        MEGA,
        (d) => n.maxClock(d, NvmlClock.SM),
      ),
      gpuRow(
        'GPU_MEMORY_FREQUENCY_STATUS',
        'GPU_MEMORY_FREQUENCY_STATUS',
        'Current memory clock',
        Units.Hertz,
        Variable,
        Average,
        MEGA,
        (d) => n.clock(d, NvmlClock.MEM),
      ),
      gpuRow(
        'GPU_TEMPERATURE',
        'GPU_TEMPERATURE',
        'GPU die temperature',
        Units.Celsius,
        Variable,
        Max,
        1,
        (d) => n.temperature(d),
      ),
      gpuRow(
        'GPU_POWER_LIMIT_MIN_AVAIL',
        'GPU_POWER_LIMIT_MIN_AVAIL',
        'Lowest power limit the device accepts',
        Units.Watts,
        Constant,
        Sum,
        MILLI,
        (d) => n.powerLimitConstraints(d).min,
      ),
      gpuRow(
        'GPU_POWER_LIMIT_MAX_AVAIL',
        'GPU_POWER_LIMIT_MAX_AVAIL',
        'Highest power limit the device accepts',
        Units.Watts,
        Constant,
        Sum,
        MILLI,
        (d) => n.powerLimitConstraints(d).max,
      ),
      gpuRow(
        'GPU_POWER_LIMIT_DEFAULT',
        'GPU_POWER_LIMIT_DEFAULT',
        'Power limit the device has after a driver reload',
        Units.Watts,
        Constant,
        Sum,
        MILLI,
        (d) => n.powerLimitDefault(d),
      ),
      {
        ...gpuRow(
          'GPU_THROTTLE_REASONS',
          'GPU_THROTTLE_REASONS',
          'Bit mask of why clocks are held down (nvmlClocksEventReasons, formerly ThrottleReasons: 0x4 SW power cap, 0x8 HW slowdown, 0x20 SW thermal…)',
          Units.None,
          Variable,
          IntegerBitwiseOr,
          1,
          (d) => n.throttleReasons(d),
        ),
        format: FormatType.Hex,
      },
      gpuRow(
        'GPU_PCIE_RX_THROUGHPUT',
        'GPU_PCIE_RX_THROUGHPUT',
        'PCIe bytes per second received by the GPU (NVML samples over 20 ms)',
        Units.None,
        Variable,
        Sum,
        1024,
        (d) => n.pcieThroughput(d, NvmlPcieCounter.RX_BYTES),
      ),
      gpuRow(
        'GPU_PCIE_TX_THROUGHPUT',
        'GPU_PCIE_TX_THROUGHPUT',
        'PCIe bytes per second sent by the GPU (NVML samples over 20 ms)',
        Units.None,
        Variable,
        Sum,
        1024,
        (d) => n.pcieThroughput(d, NvmlPcieCounter.TX_BYTES),
      ),
    ];
  }

  protected controlTable(): GpuControl<NvmlDevice>[] {
    const n = this.lib;
    const lockRow = (bound: keyof ClockLock, alias: string, description: string): GpuControl<NvmlDevice> => ({
      ...gpuRow(
        `GPU_CORE_FREQUENCY_${bound.toUpperCase()}_CONTROL`,
        alias,
        description,
        Units.Hertz,
        Behavior.Variable,
        Aggregation.Average,
        MEGA,
        (d) => this.lockOf(d)[bound],
      ),
      probe: (d) => {
        n.requireFunctions('nvmlDeviceSetGpuLockedClocks', 'nvmlDeviceResetGpuLockedClocks');
        return n.maxClock(d, NvmlClock.SM);
      },
      write: (d, hz) => this.writeLock(d, bound, hz),
    });
    return [
      {
        ...gpuRow(
          'GPU_POWER_LIMIT_CONTROL',
          'GPU_POWER_LIMIT_CONTROL',
          'GPU power limit (nvmlDeviceSetPowerManagementLimit)',
          Units.Watts,
          Behavior.Variable,
          Aggregation.Sum,
          MILLI,
          (d) => n.powerLimit(d),
        ),
        probe: (d) => {
          n.requireFunctions(
            'nvmlDeviceSetPowerManagementLimit',
            'nvmlDeviceGetPowerManagementLimitConstraints',
          );
          return n.powerLimit(d);
        },
        write: (d, watts) => this.writePowerLimit(d, watts),
      },
      lockRow(
        'min',
        'GPU_CORE_FREQUENCY_MIN_CONTROL',
        'Lower bound of the locked SM clock range; 0 = not locked (driver chooses). Reads what this process set.',
      ),
      lockRow(
        'max',
        'GPU_CORE_FREQUENCY_MAX_CONTROL',
        'Upper bound of the locked SM clock range; 0 = not locked (driver chooses). Reads what this process set.',
      ),
    ];
  }

  private lockOf(dev: NvmlDevice): ClockLock {
    return this.locks.get(dev) ?? { min: 0, max: 0 };
  }

  private writePowerLimit(dev: NvmlDevice, watts: number): void {
    const { min, max } = this.lib.powerLimitConstraints(dev);
    const mw = Math.round(watts * 1000);
    if (!(mw >= min && mw <= max)) {
      throw new InvalidArgumentError(
        `GPU_POWER_LIMIT_CONTROL: ${watts} W is outside the device's range ${min / 1000}..${max / 1000} W`,
      );
    }
    this.lib.setPowerLimit(dev, mw);
  }

  /**
   * Sets one bound of the locked clock range (Hz; 0 clears it). NVML takes both bounds at once:
   * an open lower bound is sent as 0 MHz, an open upper bound as the highest supported clock;
   * when both are open the lock is reset.
   */
  private writeLock(dev: NvmlDevice, bound: keyof ClockLock, hz: number): void {
    const name = `GPU_CORE_FREQUENCY_${bound.toUpperCase()}_CONTROL`;
    const maxAvail = this.lib.maxClock(dev, NvmlClock.SM);
    const mhz = Math.round(hz / MEGA);
    if (hz !== 0 && !(mhz >= 1 && mhz <= maxAvail)) {
      throw new InvalidArgumentError(
        `${name}: ${hz} Hz is outside 1 MHz..${maxAvail} MHz (0 clears the lock)`,
      );
    }
    const next = { ...this.lockOf(dev), [bound]: mhz };
    if (next.min !== 0 && next.max !== 0 && next.min > next.max) {
      throw new InvalidArgumentError(
        `${name}: lower bound ${next.min} MHz would exceed upper bound ${next.max} MHz`,
      );
    }
    if (next.min === 0 && next.max === 0) this.lib.resetLockedClocks(dev);
    else this.lib.setLockedClocks(dev, next.min, next.max === 0 ? maxAvail : next.max);
    this.locks.set(dev, next);
  }

  /**
   * The topology's GPU indexes of this backend's devices, with their device minor numbers
   * (/dev/nvidia<minor>); undefined where the library cannot tell (setup's diagnostics say why).
   */
  gpuMinors(): { gpu: number; minor: number | undefined }[] {
    const known = this.lib.has('nvmlDeviceGetMinorNumber');
    return this.devices.map((d) => ({
      gpu: d.gpu,
      minor: known ? this.lib.minorNumber(d.handle) : undefined,
    }));
  }

  /** NVML's per-process utilisation samples of GPU `gpu` newer than `sinceUs` (energy attribution). */
  processUtilization(gpu: number, sinceUs: bigint): ProcessUtilizationSample[] {
    return this.lib.processUtilization(this.deviceAt(gpu), sinceUs);
  }
}

registerBackend({
  name: 'NVML',
  order: 60,
  description: 'NVIDIA GPUs (libnvidia-ml)',
  offers: {
    signals: [
      'GPU_POWER',
      'GPU_ENERGY',
      'GPU_UTILIZATION',
      'GPU_MEMORY_USED',
      'GPU_MEMORY_TOTAL',
      'GPU_CORE_FREQUENCY_STATUS',
      'GPU_CORE_FREQUENCY_MAX_AVAIL',
      'GPU_MEMORY_FREQUENCY_STATUS',
      'GPU_TEMPERATURE',
      'GPU_POWER_LIMIT_MIN_AVAIL',
      'GPU_POWER_LIMIT_MAX_AVAIL',
      'GPU_POWER_LIMIT_DEFAULT',
      'GPU_THROTTLE_REASONS',
      'GPU_PCIE_RX_THROUGHPUT',
      'GPU_PCIE_TX_THROUGHPUT',
    ],
    controls: ['GPU_POWER_LIMIT_CONTROL', 'GPU_CORE_FREQUENCY_MIN_CONTROL', 'GPU_CORE_FREQUENCY_MAX_CONTROL'],
  },
  create: async (ctx) => {
    requireVendorDriver(NVML_LIBRARY, ctx.sysroot);
    const { NvmlLibrary } = await import('./ffi.js');
    return new NvmlBackend(new NvmlLibrary());
  },
});
