/**
 * Building blocks shared by the built-in MSR tables: the field shapes that recur (RAPL unit
 * fields, energy counters, cycle counters). Tables stay plain data; parseMsrTable validates them.
 */
export const RAPL_UNIT_FIELDS = {
  POWER: {
    begin_bit: 0,
    end_bit: 3,
    function: 'log_half',
    units: 'watts',
    scalar: 1,
    behavior: 'constant',
    writeable: false,
    aggregation: 'expect_same',
    description: 'Power unit of the RAPL registers: 2^-PU watts',
  },
  ENERGY: {
    begin_bit: 8,
    end_bit: 12,
    function: 'log_half',
    units: 'joules',
    scalar: 1,
    behavior: 'constant',
    writeable: false,
    aggregation: 'expect_same',
    description: 'Energy unit of the RAPL counters: 2^-ESU joules',
  },
  TIME: {
    begin_bit: 16,
    end_bit: 19,
    function: 'log_half',
    units: 'seconds',
    scalar: 1,
    behavior: 'constant',
    writeable: false,
    aggregation: 'expect_same',
    description: 'Time unit of the RAPL time windows: 2^-TU seconds',
  },
};

/** A 32-bit RAPL energy counter scaled by the energy unit of `unitRegister`. */
export function energyCounter(unitRegister: string, what: string) {
  return {
    ENERGY: {
      begin_bit: 0,
      end_bit: 31,
      function: 'overflow',
      units: 'joules',
      scalar: 1,
      behavior: 'monotone',
      writeable: false,
      aggregation: 'sum',
      units_from: `${unitRegister}:ENERGY`,
      description: `Energy used by ${what}, wrap-corrected`,
    },
  };
}

/** A 64-bit free-running counter (APERF, MPERF, TSC). */
export function cycleCounter(description: string) {
  return {
    begin_bit: 0,
    end_bit: 63,
    function: 'overflow',
    units: 'none',
    scalar: 1,
    behavior: 'monotone',
    writeable: false,
    aggregation: 'sum',
    description,
  };
}

export const APERF_MPERF = {
  MPERF: {
    offset: '0xE7',
    domain: 'cpu',
    fields: { MCNT: cycleCounter('Reference cycles while not halted (MPERF)') },
  },
  APERF: {
    offset: '0xE8',
    domain: 'cpu',
    fields: { ACNT: cycleCounter('Actual cycles while not halted (APERF)') },
  },
};
