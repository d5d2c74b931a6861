import { Aggregation } from '../../platform/aggregation.js';
import type { BackendContext } from '../../platform/backend.js';
import { DomainType } from '../../platform/domains.js';
import { errorMessage, InvalidArgumentError } from '../../platform/errors.js';
import { Behavior, Units } from '../../platform/signal-info.js';
import { type GpuControl, type GpuDevice, type GpuQuery, GpuTableBackend, gpuRow } from '../gpu-table.js';
import { registerBackend } from '../registry.js';
import { requireVendorDriver } from '../vendor-library.js';
import { AMDSMI_LIBRARY, AmdSmiClock, type AmdSmiProcessor, AmdSmiTemperature } from './api.js';
import { checkEnergyCounters, type EnergyCheck, PowerIntegrator } from './energy-check.js';
import type { AmdSmiLibrary } from './ffi.js';

const MICRO = 1e-6;
const MEGA = 1e6;

/** Where GPU_ENERGY comes from on one device, decided at setup (see energy-check.ts). */
interface EnergySource {
  kind: 'counter' | 'integrated';
  check: EnergyCheck;
  integrator?: PowerIntegrator;
}

/**
 * AMD GPUs through AMD SMI. setup() always calls amdsmi_init in the current process (library
 * state does not survive fork(); the batch server sets up its own PlatformIO in a child).
 */
export class AmdSmiBackend extends GpuTableBackend<AmdSmiProcessor, AmdSmiLibrary> {
  readonly id = 'amdsmi';
  readonly name = 'AMDSMI';
  readonly description = 'AMD GPUs through the AMD System Management Interface library (libamd_smi)';
  private energy = new Map<AmdSmiProcessor, EnergySource>();

  constructor(lib: AmdSmiLibrary) {
    super(lib);
  }

  protected async openDevices(ctx: BackendContext): Promise<GpuDevice<AmdSmiProcessor>[]> {
    const handles = this.lib.processors();
    const checks = await checkEnergyCounters(handles, {
      power: (d) => this.lib.socketPower(d),
      energyMicrojoules: (d) => this.lib.energy(d).microjoules,
    });
    this.energy = new Map();
    return handles.map((handle, i) => {
      const { check, start } = checks[i]!;
      const source: EnergySource = check.trusted
        ? { kind: 'counter', check }
        : {
            kind: 'integrated',
            check,
            integrator: new PowerIntegrator(() => this.lib.socketPower(handle), start),
          };
      this.energy.set(handle, source);
      return {
        handle,
        cpus: this.cpusNear(ctx, handle),
        info: {
          uuid: this.unlessLacking('GPU UUIDs unknown', () => this.lib.uuid(handle)),
          pciBusId: this.unlessLacking('GPU PCI addresses unknown', () => this.lib.pciBusId(handle)),
          energySource: source.kind,
          energyCheck: check,
        },
      };
    });
  }

  override metadata(): Record<string, unknown> {
    return { ...super.metadata(), libraryVersion: this.lib.version };
  }

  /** CPUs of the GPU's NUMA node; all CPUs when the library cannot say. */
  private cpusNear(ctx: BackendContext, dev: AmdSmiProcessor): number[] {
    try {
      const node = this.lib.numaNode(dev);
      const cpus = ctx.topology.numa.find((n) => n.node === node)?.cpus;
      if (cpus && cpus.length > 0) return [...cpus];
    } catch (err) {
      this.problems.push({ backend: this.name, reason: `GPU NUMA affinity unknown: ${errorMessage(err)}` });
    }
    return ctx.topology.cpusOf(DomainType.Board, 0);
  }

  /** µJ from the device's trusted counter, or from integrating its power where it is not. */
  private energyMicrojoules(dev: AmdSmiProcessor): number {
    const source = this.energy.get(dev);
    if (source?.integrator) return source.integrator.advance() / MICRO;
    return this.lib.energy(dev).microjoules;
  }

  private energyDescription(): string {
    const base = 'GPU energy: accumulator × counter_resolution (amdsmi_get_energy_count)';
    const integrated = this.devices.filter((d) => this.energy.get(d.handle)?.kind === 'integrated');
    if (integrated.length === 0) return `${base}; source: counter`;
    const which = integrated.map((d) => `gpu ${d.gpu}`).join(', ');
    return `${base}; source: integrated from socket power on ${which}, where the counter disagreed with power at setup (see metadata energyCheck)`;
  }

  protected signalTable(): GpuQuery<AmdSmiProcessor>[] {
    const s = this.lib;
    const { Variable, Monotone, Constant } = Behavior;
    const { Sum, Average, Max } = Aggregation;
    return [
      gpuRow(
        'GPU_POWER',
        'GPU_POWER',
        'GPU socket power, average (amdsmi_get_power_info; current power on parts without an average)',
        Units.Watts,
        Variable,
        Sum,
        1,
        (d) => s.socketPower(d),
      ),
      gpuRow('GPU_ENERGY', 'GPU_ENERGY', this.energyDescription(), Units.Joules, Monotone, Sum, MICRO, (d) =>
        this.energyMicrojoules(d),
      ),
      gpuRow(
        'GPU_UTILIZATION',
        'GPU_UTILIZATION',
        'Fraction of time the graphics engine was busy (gfx_activity)',
        Units.None,
        Variable,
        Average,
        0.01,
        (d) => s.activity(d).gfx,
      ),
      gpuRow(
        'GPU_MEMORY_UTILIZATION',
        undefined,
        'Fraction of time the memory controller was busy (umc_activity)',
        Units.None,
        Variable,
        Average,
        0.01,
        (d) => s.activity(d).umc,
      ),
      gpuRow('GPU_MEMORY_USED', 'GPU_MEMORY_USED', 'VRAM in use, bytes', Units.None, Variable, Sum, 1, (d) =>
        s.vramUsed(d),
      ),
      gpuRow(
        'GPU_MEMORY_TOTAL',
        'GPU_MEMORY_TOTAL',
        'VRAM installed, bytes',
        Units.None,
        Constant,
        Sum,
        1,
        (d) => s.vramTotal(d),
      ),
      gpuRow(
        'GPU_CORE_FREQUENCY_STATUS',
        'GPU_CORE_FREQUENCY_STATUS',
        'Current graphics (SYS/GFX) clock',
        Units.Hertz,
        Variable,
        Average,
        MEGA,
        (d) => s.clock(d, AmdSmiClock.SYS),
      ),
      gpuRow(
        'GPU_MEMORY_FREQUENCY_STATUS',
        'GPU_MEMORY_FREQUENCY_STATUS',
        'Current memory clock',
        Units.Hertz,
        Variable,
        Average,
        MEGA,
        (d) => s.clock(d, AmdSmiClock.MEM),
      ),
      gpuRow(
        'GPU_TEMPERATURE',
        'GPU_TEMPERATURE',
        'GPU edge temperature',
        Units.Celsius,
        Variable,
        Max,
        1,
        (d) => s.temperature(d, AmdSmiTemperature.EDGE),
      ),
      gpuRow(
        'GPU_HOTSPOT_TEMPERATURE',
        undefined,
        'GPU hotspot (junction) temperature',
        Units.Celsius,
        Variable,
        Max,
        1,
        (d) => s.temperature(d, AmdSmiTemperature.HOTSPOT),
      ),
      gpuRow(
        'GPU_POWER_LIMIT_MIN_AVAIL',
        'GPU_POWER_LIMIT_MIN_AVAIL',
        'Lowest power cap the device accepts',
        Units.Watts,
        Constant,
        Sum,
        MICRO,
        (d) => s.powerCap(d).min,
      ),
      gpuRow(
        'GPU_POWER_LIMIT_MAX_AVAIL',
        'GPU_POWER_LIMIT_MAX_AVAIL',
        'Highest power cap the device accepts',
        Units.Watts,
        Constant,
        Sum,
        MICRO,
        (d) => s.powerCap(d).max,
      ),
      gpuRow(
        'GPU_POWER_LIMIT_DEFAULT',
        'GPU_POWER_LIMIT_DEFAULT',
        'Default power cap',
        Units.Watts,
        Constant,
        Sum,
        MICRO,
        (d) => s.powerCap(d).defaultCap,
      ),
    ];
  }

  protected controlTable(): GpuControl<AmdSmiProcessor>[] {
    const s = this.lib;
    return [
      {
        ...gpuRow(
          'GPU_POWER_LIMIT_CONTROL',
          'GPU_POWER_LIMIT_CONTROL',
          'GPU power cap (amdsmi_set_power_cap)',
          Units.Watts,
          Behavior.Variable,
          Aggregation.Sum,
          MICRO,
          (d) => s.powerCap(d).cap,
        ),
        probe: (d) => {
          s.requireFunctions('amdsmi_set_power_cap');
          return s.powerCap(d);
        },
        write: (d, watts) => {
          const { min, max } = s.powerCap(d);
          const uw = Math.round(watts / MICRO);
          if (!(uw >= min && uw <= max)) {
            throw new InvalidArgumentError(
              `GPU_POWER_LIMIT_CONTROL: ${watts} W is outside the device's range ${min * MICRO}..${max * MICRO} W`,
            );
          }
          s.setPowerCap(d, uw);
        },
      },
    ];
  }
}

registerBackend({
  name: 'AMDSMI',
  order: 61,
  description: 'AMD GPUs (libamd_smi)',
  offers: {
    signals: [
      'GPU_POWER',
      'GPU_ENERGY',
      'GPU_UTILIZATION',
      'GPU_MEMORY_USED',
      'GPU_MEMORY_TOTAL',
      'GPU_CORE_FREQUENCY_STATUS',
      'GPU_MEMORY_FREQUENCY_STATUS',
      'GPU_TEMPERATURE',
      'GPU_POWER_LIMIT_MIN_AVAIL',
      'GPU_POWER_LIMIT_MAX_AVAIL',
      'GPU_POWER_LIMIT_DEFAULT',
    ],
    controls: ['GPU_POWER_LIMIT_CONTROL'],
  },
  create: async (ctx) => {
    requireVendorDriver(AMDSMI_LIBRARY, ctx.sysroot);
    const { AmdSmiLibrary } = await import('./ffi.js');
    return new AmdSmiBackend(new AmdSmiLibrary());
  },
});
