import { Aggregation } from '../../platform/aggregation.js';
import type { BackendContext } from '../../platform/backend.js';
import { DomainType } from '../../platform/domains.js';
import { FormatType } from '../../platform/format.js';
import { Behavior, Units } from '../../platform/signal-info.js';
import type { Sysroot } from '../../platform/sysroot.js';
import { type SignalDef, TableBackend } from '../../platform/table-backend.js';
import { discoverPolicies, parseSysfsNumber } from '../cpufreq/parse.js';
import { BackendUnavailableError, registerBackend } from '../registry.js';
import { type Cpuinfo, parseCpuinfo } from './parse.js';

const CPUINFO_FILE = '/proc/cpuinfo';
/** Frequency step of Intel and AMD P-states (GEOPM's CPUINFO::FREQ_STEP). */
const FREQ_STEP_HZ = 100e6;

/** One constant of the node: name, alias, value (undefined when this node does not tell). */
interface Constant {
  name: string;
  alias?: string;
  /** The catalogue row it carries the meaning of, for constants without an alias. */
  feeds?: string;
  description: string;
  units: Units;
  format: FormatType;
  value: number | undefined;
  /** Why the value is unknown, for diagnostics. */
  missing: string;
}

/** Extremes over all cpufreq policies of cpuinfo_min_freq / cpuinfo_max_freq / base_frequency, in Hz. */
function cpufreqRange(root: Sysroot): { min?: number; max?: number; base?: number } {
  const read = (dir: string, file: string): number | undefined => {
    const path = `${dir}/${file}`;
    return root.exists(path) ? parseSysfsNumber(root.readText(path), path) * 1000 : undefined;
  };
  const mins: number[] = [];
  const maxs: number[] = [];
  const bases: number[] = [];
  for (const p of discoverPolicies(root)) {
    const min = read(p.dir, 'cpuinfo_min_freq');
    const max = read(p.dir, 'cpuinfo_max_freq');
    const base = read(p.dir, 'base_frequency');
    if (min !== undefined) mins.push(min);
    if (max !== undefined) maxs.push(max);
    if (base !== undefined) bases.push(base);
  }
  return {
    ...(mins.length ? { min: Math.min(...mins) } : {}),
    ...(maxs.length ? { max: Math.max(...maxs) } : {}),
    ...(bases.length ? { base: Math.max(...bases) } : {}),
  };
}

/**
 * What the processor says about itself: /proc/cpuinfo (vendor, model, marked frequency) and the
 * cpufreq hardware range, as constant board signals. Registered before CPUFREQ, so where both
 * offer CPU_FREQUENCY_{MIN,MAX}_AVAIL the per-CPU CPUFREQ signals win and these are the fallback.
 */
export class CpuinfoBackend extends TableBackend<null> {
  readonly id = 'cpuinfo';
  readonly name = 'CPUINFO';
  readonly description = 'Processor identity and frequency range from /proc/cpuinfo and cpufreq';
  private readonly cpuinfo: Cpuinfo;

  constructor(info: Cpuinfo) {
    super();
    this.cpuinfo = info;
  }

  protected snapshot(): null {
    return null;
  }

  private constants(ctx: BackendContext): Constant[] {
    const range = cpufreqRange(ctx.sysroot);
    const hz = { units: Units.Hertz, format: FormatType.Double };
    const id = { units: Units.None, format: FormatType.Integer, missing: `no such field in ${CPUINFO_FILE}` };
    const noCpufreq = 'no cpufreq policy gives the hardware range';
    return [
      {
        ...hz,
        name: 'FREQ_STICKER',
        alias: 'CPU_FREQUENCY_STICKER',
        description: 'Marked (base) frequency: the model name "@ x GHz", else intel_pstate base_frequency',
        value: this.cpuinfo.stickerHz ?? range.base,
        missing: 'the model name has no "@ x GHz" and cpufreq has no base_frequency',
      },
      {
        ...hz,
        name: 'FREQ_STEP',
        alias: 'CPU_FREQUENCY_STEP',
        description: 'Frequency step between P-states (100 MHz)',
        value: FREQ_STEP_HZ,
        missing: '',
      },
      {
        ...hz,
        name: 'FREQ_MIN',
        alias: 'CPU_FREQUENCY_MIN_AVAIL',
        description: 'Lowest frequency any CPU supports (cpufreq cpuinfo_min_freq)',
        value: range.min,
        missing: noCpufreq,
      },
      {
        ...hz,
        name: 'FREQ_MAX',
        alias: 'CPU_FREQUENCY_MAX_AVAIL',
        description: 'Highest frequency any CPU supports (cpufreq cpuinfo_max_freq)',
        value: range.max,
        missing: noCpufreq,
      },
      {
        ...id,
        name: 'FAMILY',
        feeds: 'CPU_FAMILY',
        description: 'x86 CPU family (cpu family)',
        value: this.cpuinfo.family,
      },
      {
        ...id,
        name: 'MODEL',
        feeds: 'CPU_MODEL',
        description: 'x86 CPU model number (model)',
        value: this.cpuinfo.model,
      },
      {
        ...id,
        name: 'STEPPING',
        feeds: 'CPU_STEPPING',
        description: 'x86 CPU stepping (stepping)',
        value: this.cpuinfo.stepping,
      },
    ];
  }

  protected define(ctx: BackendContext): { signals: SignalDef<null>[] } {
    const signals: SignalDef<null>[] = [];
    for (const c of this.constants(ctx)) {
      if (c.value === undefined) {
        this.omitSignal(c.name, c.alias ? [c.alias] : [], c.missing);
        continue;
      }
      const value = c.value;
      signals.push({
        name: c.name,
        aliases: c.alias ? [c.alias] : [],
        ...(c.feeds ? { feeds: c.feeds } : {}),
        description: c.description,
        domain: DomainType.Board,
        aggregation: Aggregation.ExpectSame,
        format: c.format,
        behavior: Behavior.Constant,
        units: c.units,
        read: () => value,
      });
    }
    return { signals };
  }

  override metadata(): Record<string, unknown> {
    const { vendor, modelName, family, model, stepping } = this.cpuinfo;
    return {
      vendor,
      model_name: modelName,
      family,
      model,
      stepping,
      logical_cpus: this.cpuinfo.processors.filter((p) => 'processor' in p).length,
    };
  }
}

registerBackend({
  name: 'CPUINFO',
  order: 10,
  description: 'processor identity and frequency range',
  offers: {
    signals: [
      'CPU_FREQUENCY_STICKER',
      'CPU_FREQUENCY_STEP',
      'CPU_FREQUENCY_MIN_AVAIL',
      'CPU_FREQUENCY_MAX_AVAIL',
    ],
  },
  create: (ctx) => {
    if (!ctx.sysroot.exists(CPUINFO_FILE)) {
      throw new BackendUnavailableError(`${ctx.sysroot.path(CPUINFO_FILE)} not found (no procfs mounted?)`);
    }
    return new CpuinfoBackend(parseCpuinfo(ctx.sysroot.readText(CPUINFO_FILE)));
  },
});
