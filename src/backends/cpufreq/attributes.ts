import { Aggregation } from '../../platform/aggregation.js';
import { FormatType } from '../../platform/format.js';
import { Behavior, Units } from '../../platform/signal-info.js';

/** One cpufreq policy file exposed as a signal (and a control when writeable). */
export interface SysfsAttribute {
  /** File name inside policyN. */
  attribute: string;
  /** Signal name without the CPUFREQ:: prefix. */
  name: string;
  /** Multiplier from the file's unit to SI (kHz → Hz is 1000). */
  scalar: number;
  description: string;
  aggregation: Aggregation;
  behavior: Behavior;
  format: FormatType;
  units: Units;
  writeable: boolean;
  /** High-level name that stands for this one. */
  alias?: string;
}

const KHZ = 1000;
const freq = { scalar: KHZ, format: FormatType.Double, units: Units.Hertz } as const;

/**
 * The cpufreq attributes CPUFREQ serves (cpufreq's user guide, Documentation/admin-guide/pm/
 * cpufreq.rst). Attributes a driver does not provide are left out at setup. Constant ones are
 * read once at setup; the others on every batch.
 */
export const CPUFREQ_ATTRIBUTES: readonly SysfsAttribute[] = [
  {
    ...freq,
    attribute: 'scaling_cur_freq',
    name: 'SCALING_CUR_FREQ',
    description: 'Current CPU frequency as the cpufreq driver last saw it',
    aggregation: Aggregation.Average,
    behavior: Behavior.Variable,
    writeable: false,
    alias: 'CPU_FREQUENCY_STATUS',
  },
  {
    ...freq,
    attribute: 'scaling_min_freq',
    name: 'SCALING_MIN_FREQ',
    description: 'Lowest frequency the governor may select',
    aggregation: Aggregation.Average,
    behavior: Behavior.Variable,
    writeable: true,
    alias: 'CPU_FREQUENCY_MIN_CONTROL',
  },
  {
    ...freq,
    attribute: 'scaling_max_freq',
    name: 'SCALING_MAX_FREQ',
    description: 'Highest frequency the governor may select',
    aggregation: Aggregation.Average,
    behavior: Behavior.Variable,
    writeable: true,
    alias: 'CPU_FREQUENCY_MAX_CONTROL',
  },
  {
    ...freq,
    attribute: 'cpuinfo_min_freq',
    name: 'CPUINFO_MIN_FREQ',
    description: 'Lowest frequency the hardware supports',
    aggregation: Aggregation.Min,
    behavior: Behavior.Constant,
    writeable: false,
    alias: 'CPU_FREQUENCY_MIN_AVAIL',
  },
  {
    ...freq,
    attribute: 'cpuinfo_max_freq',
    name: 'CPUINFO_MAX_FREQ',
    description: 'Highest frequency the hardware supports (turbo included)',
    aggregation: Aggregation.Max,
    behavior: Behavior.Constant,
    writeable: false,
    alias: 'CPU_FREQUENCY_MAX_AVAIL',
  },
  {
    ...freq,
    attribute: 'base_frequency',
    name: 'BASE_FREQUENCY',
    description: 'Guaranteed (non-turbo) frequency reported by intel_pstate',
    aggregation: Aggregation.ExpectSame,
    behavior: Behavior.Constant,
    writeable: false,
  },
  {
    attribute: 'cpuinfo_transition_latency',
    name: 'CPUINFO_TRANSITION_LATENCY',
    scalar: 1e-9,
    format: FormatType.Double,
    units: Units.Seconds,
    description: 'Time the hardware takes to switch between two frequencies',
    aggregation: Aggregation.Max,
    behavior: Behavior.Constant,
    writeable: false,
  },
];
