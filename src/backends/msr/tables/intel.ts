import { APERF_MPERF, cycleCounter, energyCounter, RAPL_UNIT_FIELDS } from './common.js';

/** Intel family 6 (Sandy Bridge and later): RAPL, frequency, cycle counters, thermal status. */
const power = (begin: number, end: number, description: string, writeable: boolean) => ({
  begin_bit: begin,
  end_bit: end,
  function: 'scale',
  units: 'watts',
  scalar: 1,
  behavior: writeable ? 'variable' : 'constant',
  writeable,
  aggregation: 'sum',
  units_from: 'RAPL_POWER_UNIT:POWER',
  description,
});
const window = (begin: number, end: number, description: string, writeable: boolean) => ({
  begin_bit: begin,
  end_bit: end,
  function: '7_bit_float',
  units: 'seconds',
  scalar: 1,
  behavior: writeable ? 'variable' : 'constant',
  writeable,
  aggregation: 'select_first',
  units_from: 'RAPL_POWER_UNIT:TIME',
  description,
});
/** Core frequency as a bus ratio in bits 15:8 (× 100 MHz). */
const ratioFrequency = (description: string, writeable: boolean) => ({
  begin_bit: 8,
  end_bit: 15,
  function: 'scale',
  units: 'hertz',
  scalar: 1e8,
  behavior: 'variable',
  writeable,
  aggregation: 'average',
  description,
});
const flag = (bit: number, description: string, writeable = true) => ({
  begin_bit: bit,
  end_bit: bit,
  function: 'logic',
  units: 'none',
  scalar: 1,
  behavior: 'variable',
  writeable,
  aggregation: 'expect_same',
  description,
});
const celsius = (begin: number, end: number, description: string) => ({
  begin_bit: begin,
  end_bit: end,
  function: 'scale',
  units: 'celsius',
  scalar: 1,
  behavior: 'variable',
  writeable: false,
  aggregation: 'average',
  description,
});

export const INTEL_MSR_TABLE = {
  match: { vendor: 'GenuineIntel', families: [6] },
  msrs: {
    TIME_STAMP_COUNTER: {
      offset: '0x10',
      domain: 'cpu',
      fields: { TIMESTAMP_COUNT: cycleCounter('Time stamp counter (constant rate)') },
    },
    ...APERF_MPERF,
    PERF_STATUS: {
      offset: '0x198',
      domain: 'cpu',
      fields: { FREQ: ratioFrequency('Current core frequency (ratio × 100 MHz)', false) },
    },
    PERF_CTL: {
      offset: '0x199',
      domain: 'cpu',
      fields: { FREQ: ratioFrequency('Requested core frequency (ratio × 100 MHz)', true) },
    },
    THERM_STATUS: {
      offset: '0x19C',
      domain: 'core',
      fields: {
        DIGITAL_READOUT: celsius(16, 22, 'Degrees below the throttle temperature (core)'),
        READING_VALID: flag(31, 'Digital readout valid', false),
      },
    },
    TEMPERATURE_TARGET: {
      offset: '0x1A2',
      domain: 'package',
      fields: {
        PROCHOT_MIN: {
          ...celsius(16, 23, 'Temperature at which the package starts throttling'),
          behavior: 'constant',
          aggregation: 'expect_same',
        },
      },
    },
    PACKAGE_THERM_STATUS: {
      offset: '0x1B1',
      domain: 'package',
      fields: { DIGITAL_READOUT: celsius(16, 22, 'Degrees below the throttle temperature (package)') },
    },
    RAPL_POWER_UNIT: { offset: '0x606', domain: 'package', fields: RAPL_UNIT_FIELDS },
    PKG_POWER_LIMIT: {
      offset: '0x610',
      domain: 'package',
      fields: {
        PL1_POWER_LIMIT: power(0, 14, 'Long-term package power limit (PL1)', true),
        PL1_LIMIT_ENABLE: flag(15, 'PL1 enforced'),
        PL1_CLAMP_ENABLE: flag(16, 'PL1 may clamp below the requested frequency'),
        PL1_TIME_WINDOW: window(17, 23, 'PL1 averaging window', true),
        PL2_POWER_LIMIT: power(32, 46, 'Short-term package power limit (PL2)', true),
        PL2_LIMIT_ENABLE: flag(47, 'PL2 enforced'),
        PL2_CLAMP_ENABLE: flag(48, 'PL2 may clamp below the requested frequency'),
        PL2_TIME_WINDOW: window(49, 55, 'PL2 averaging window', true),
        LOCK: flag(63, 'Power limit register locked until reset', false),
      },
    },
    PKG_ENERGY_STATUS: {
      offset: '0x611',
      domain: 'package',
      fields: energyCounter('RAPL_POWER_UNIT', 'the package'),
    },
    PKG_POWER_INFO: {
      offset: '0x614',
      domain: 'package',
      fields: {
        THERMAL_SPEC_POWER: power(0, 14, 'Thermal design power of the package', false),
        MIN_POWER: power(16, 30, 'Smallest package power limit', false),
        MAX_POWER: power(32, 46, 'Largest package power limit', false),
        MAX_TIME_WINDOW: window(48, 54, 'Longest power limit window', false),
      },
    },
    DRAM_ENERGY_STATUS: {
      offset: '0x619',
      domain: 'package',
      fields: energyCounter('RAPL_POWER_UNIT', 'DRAM of the package'),
    },
    PP0_ENERGY_STATUS: {
      offset: '0x639',
      domain: 'package',
      fields: energyCounter('RAPL_POWER_UNIT', 'the cores of the package (PP0)'),
    },
    PLATFORM_ENERGY_STATUS: {
      offset: '0x64D',
      domain: 'board',
      fields: energyCounter('RAPL_POWER_UNIT', 'the whole platform (psys)'),
    },
  },
  aliases: {
    CPU_ENERGY: 'PKG_ENERGY_STATUS:ENERGY',
    DRAM_ENERGY: 'DRAM_ENERGY_STATUS:ENERGY',
    BOARD_ENERGY: 'PLATFORM_ENERGY_STATUS:ENERGY',
    CPU_POWER: 'CPU_POWER',
    DRAM_POWER: 'DRAM_POWER',
    BOARD_POWER: 'BOARD_POWER',
    CPU_POWER_LIMIT_CONTROL: 'PKG_POWER_LIMIT:PL1_POWER_LIMIT',
    CPU_POWER_TIME_WINDOW_CONTROL: 'PKG_POWER_LIMIT:PL1_TIME_WINDOW',
    CPU_POWER_LIMIT_DEFAULT: 'PKG_POWER_INFO:THERMAL_SPEC_POWER',
    CPU_POWER_MIN_AVAIL: 'PKG_POWER_INFO:MIN_POWER',
    CPU_POWER_MAX_AVAIL: 'PKG_POWER_INFO:MAX_POWER',
    CPU_FREQUENCY_STATUS: 'PERF_STATUS:FREQ',
    CPU_FREQUENCY_MAX_CONTROL: 'PERF_CTL:FREQ',
    CPU_CYCLES_THREAD: 'APERF:ACNT',
    CPU_CYCLES_REFERENCE: 'MPERF:MCNT',
    CPU_TIMESTAMP_COUNTER: 'TIME_STAMP_COUNTER:TIMESTAMP_COUNT',
    CPU_CORE_TEMPERATURE: 'CPU_CORE_TEMPERATURE',
    CPU_PACKAGE_TEMPERATURE: 'CPU_PACKAGE_TEMPERATURE',
  },
  derived: {
    CPU_POWER: {
      derivative: 'PKG_ENERGY_STATUS:ENERGY',
      description: 'Package power from the energy counter',
    },
    DRAM_POWER: {
      derivative: 'DRAM_ENERGY_STATUS:ENERGY',
      description: 'DRAM power from the energy counter',
    },
    BOARD_POWER: {
      derivative: 'PLATFORM_ENERGY_STATUS:ENERGY',
      description: 'Platform (psys) power from the energy counter',
    },
    CPU_CORE_TEMPERATURE: {
      difference: ['TEMPERATURE_TARGET:PROCHOT_MIN', 'THERM_STATUS:DIGITAL_READOUT'],
      description: 'Core temperature: throttle temperature minus the core digital readout',
    },
    CPU_PACKAGE_TEMPERATURE: {
      difference: ['TEMPERATURE_TARGET:PROCHOT_MIN', 'PACKAGE_THERM_STATUS:DIGITAL_READOUT'],
      description: 'Package temperature: throttle temperature minus the package digital readout',
    },
  },
};

/**
 * Xeon server parts count DRAM energy in a fixed unit of 2^-16 J (15.3 µJ), whatever
 * RAPL_POWER_UNIT says (Intel SDM and datasheets; the kernel's intel_rapl driver does the same).
 * Haswell-EP 63, Broadwell-EP 79, Skylake/Cascade Lake-SP 85, Ice Lake-SP 106,
 * Sapphire Rapids 143, Emerald Rapids 207.
 */
export const INTEL_SERVER_DRAM_TABLE = {
  match: { vendor: 'GenuineIntel', families: [6], models: [63, 79, 85, 106, 143, 207] },
  msrs: {
    DRAM_ENERGY_STATUS: {
      offset: '0x619',
      domain: 'package',
      fields: {
        ENERGY: {
          begin_bit: 0,
          end_bit: 31,
          function: 'overflow',
          units: 'joules',
          scalar: 2 ** -16,
          behavior: 'monotone',
          writeable: false,
          aggregation: 'sum',
          description:
            'Energy used by DRAM of the package (server parts: fixed 2^-16 J unit), wrap-corrected',
        },
      },
    },
  },
};
