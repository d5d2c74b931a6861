import { APERF_MPERF, energyCounter, RAPL_UNIT_FIELDS } from './common.js';

/** AMD Zen (families 17h, 19h, 1Ah): RAPL energy counters, cycle counters, P-state status. */
const pstate = (begin: number, end: number, description: string) => ({
  begin_bit: begin,
  end_bit: end,
  function: 'scale',
  units: 'none',
  scalar: 1,
  behavior: 'variable',
  writeable: false,
  aggregation: 'average',
  description,
});

export const AMD_MSR_TABLE = {
  match: { vendor: 'AuthenticAMD', families: [0x17, 0x19, 0x1a] },
  msrs: {
    ...APERF_MPERF,
    HW_PSTATE_STATUS: {
      offset: '0xC0010293',
      domain: 'cpu',
      fields: {
        CUR_FID: pstate(0, 7, 'Current core frequency id (frequency = FID × 200 MHz / DFS id)'),
        CUR_DFS_ID: pstate(8, 13, 'Current core divisor id'),
        CUR_PSTATE: pstate(16, 18, 'Current P-state number'),
      },
    },
    RAPL_PWR_UNIT: { offset: '0xC0010299', domain: 'package', fields: RAPL_UNIT_FIELDS },
    CORE_ENERGY_STAT: {
      offset: '0xC001029A',
      domain: 'core',
      fields: energyCounter('RAPL_PWR_UNIT', 'the core'),
    },
    PKG_ENERGY_STAT: {
      offset: '0xC001029B',
      domain: 'package',
      fields: energyCounter('RAPL_PWR_UNIT', 'the package'),
    },
  },
  aliases: {
    CPU_ENERGY: 'PKG_ENERGY_STAT:ENERGY',
    CPU_POWER: 'CPU_POWER',
    CPU_CORE_ENERGY: 'CORE_ENERGY_STAT:ENERGY',
    CPU_CYCLES_THREAD: 'APERF:ACNT',
    CPU_CYCLES_REFERENCE: 'MPERF:MCNT',
  },
  derived: {
    CPU_POWER: { derivative: 'PKG_ENERGY_STAT:ENERGY', description: 'Package power from the energy counter' },
  },
};
