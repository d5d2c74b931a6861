import * as z from '../../platform/validation.js';
import { BENCH_UNIT_DEFAULTS } from '../model/units.js';

const regexList = z.string().check(
  z.refine(
    (s) =>
      s
        .split(/\s+/)
        .filter(Boolean)
        .every((r) => {
          try {
            new RegExp(r);
            return true;
          } catch {
            return false;
          }
        }),
    'not a space-separated list of valid regular expressions',
  ),
);
/** A list of regexes, empty by default (everything). */
const regexSetting = (what: string) =>
  ({ schema: regexList, default: '', flag: { help: `space-separated regexes of ${what}` } }) as const;
const number = (min: number, max = Number.POSITIVE_INFINITY) =>
  z.coerce.number().check(z.minimum(min), z.maximum(max));
const int = (min: number) =>
  z.coerce.number().check(z.refine(Number.isSafeInteger, 'expected an integer'), z.minimum(min));
export const FORMATS = ['text', 'json', 'csv', 'bench', 'hdf5', 'html'] as const;
/**
 * perun's `pickle` format is Python's pickle of perun's own classes (perun.data_model), which only
 * an installed perun can load; joulegate has no such classes to write, and its HDF5 holds the
 * same tree in a form perun and h5py read. Refused, saying so.
 */
export const PICKLE_REFUSED = `pickle is perun's Python pickle of its own classes, which only perun loads; use hdf5 (perun reads it)`;
const formatList = z.string().check(
  z.refine(
    (s) => !s.split(/[\s,]+/).includes('pickle'),
    `${PICKLE_REFUSED}: expected one or more of ${FORMATS.join(', ')}`,
  ),
  z.refine(
    (s) =>
      s.split(/[\s,]+/).filter(Boolean).length > 0 &&
      s
        .split(/[\s,]+/)
        .filter(Boolean)
        .every((f) => (FORMATS as readonly string[]).includes(f)),
    `expected one or more of ${FORMATS.join(', ')}`,
  ),
);
const metricList = z
  .string()
  .check(z.regex(/^[a-z_]+(\s*,\s*[a-z_]+)*$/, 'expected comma-separated metric names'));
/** perun's `[debug] log_lvl` values, least severe first. */
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] as const;
/** A log level in any case; perun's `WARN` is WARNING (as perun's sanitiser makes it). */
const logLevel = z.pipe(
  z.string().check(
    z.overwrite((s) => {
      const upper = s.trim().toUpperCase();
      return upper === 'WARN' ? 'WARNING' : upper;
    }),
  ),
  z.enum(LOG_LEVELS),
);
const magnitude = z.enum(['', 'p', 'n', 'u', 'µ', 'm', 'k', 'M', 'G', 'T']);

/**
 * How a setting is given on the command line (joulegate monitor, showconf, job-report). The long
 * flag is the key with dashes (`--data-out`); the underscore form (`--data_out`) is accepted too.
 */
export interface ConfigFlag {
  help: string;
  /** perun's one-letter flag. */
  short?: `-${string}`;
  /** perun's other names for the setting, accepted as long flags as well. */
  perunNames?: readonly string[];
}

/** One setting: its validator, its default (as written in an INI file) and its flag. */
export interface ConfigKeySpec {
  schema: z.ZodMiniType;
  default: string;
  /** false: set in files and the environment only. */
  flag: ConfigFlag | false;
}

/**
 * perun's configuration sections and keys (plus the estimate keys joulegate adds), each with its
 * validator, default and CLI flag. One table drives parsing, validation, env names, the flags
 * and `showconf`.
 */
export const CONFIG_SCHEMA = {
  'post-processing': {
    power_overhead: {
      schema: number(0),
      default: '0',
      flag: { help: 'watts added per host for unmeasured parts' },
    },
    pue: { schema: number(1), default: '1.0', flag: { help: 'power usage effectiveness (>= 1)' } },
    emissions_factor: {
      schema: number(0),
      default: '230.0',
      // perun's --emission_factor, which perun itself drops
      flag: { help: 'gCO2e per kWh', perunNames: ['emission_factor'] },
    },
    price_factor: { schema: number(0), default: '0.2678', flag: { help: 'price per kWh' } },
    price_unit: {
      schema: z.string().check(z.minLength(1)),
      default: '€',
      flag: { help: 'currency of price_factor' },
    },
  },
  monitor: {
    sampling_period: {
      schema: number(0.01),
      default: '1',
      flag: { help: 'seconds between samples (>= 0.01)' },
    },
    include_backends: regexSetting('backends to use'),
    include_sensors: regexSetting('sensor ids to sample'),
    exclude_backends: regexSetting('backends to skip'),
    exclude_sensors: regexSetting('sensor ids to skip'),
    estimate_tdp: {
      schema: number(0),
      default: '0',
      flag: { help: 'package TDP in W for estimates (0 = from the model table)' },
    },
    estimate_threads: {
      schema: int(0),
      default: '0',
      flag: { help: 'hardware threads per package for estimates (0 = from the table)' },
    },
  },
  output: {
    app_name: {
      schema: z.string(),
      default: '',
      flag: { help: 'name of the app in reports (default: the command)', short: '-n' },
    },
    run_id: {
      schema: z.string().check(z.regex(/^[\w.:-]*$/, 'only letters, digits, _ . : - allowed')),
      default: '',
      flag: { help: 'run id (default: ISO time; SLURM = $SLURM_JOB_ID)', short: '-i' },
    },
    format: {
      schema: formatList,
      default: 'text',
      flag: { help: 'output formats, comma-separated: text,json,csv,bench,hdf5,html', short: '-f' },
    },
    data_out: {
      schema: z.string().check(z.minLength(1)),
      default: './joulegate_results',
      flag: { help: 'output directory' },
    },
    hdf5_file: {
      schema: z.enum(['run', 'app']),
      default: 'run',
      flag: {
        help:
          "run: one <app>_<run id>.hdf5 per run (with -f hdf5); app: perun's habit, every run added to " +
          'one <app>.hdf5 in data_out (written whatever -f says; export -i picks a run)',
      },
    },
  },
  benchmarking: {
    rounds: { schema: int(1), default: '1', flag: { help: 'measured rounds' } },
    warmup_rounds: { schema: int(0), default: '0', flag: { help: 'unmeasured rounds before them' } },
    metrics: {
      schema: metricList,
      default: 'runtime,energy',
      flag: { help: 'metrics of the bench format', perunNames: ['bench_metrics'] },
    },
    region_metrics: {
      schema: metricList,
      default: 'runtime,energy',
      flag: { help: 'region metrics of the bench format' },
    },
  },
  'benchmarking.units': {
    joule: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.joule, flag: false },
    second: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.second, flag: false },
    percent: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.percent, flag: false },
    watt: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.watt, flag: false },
    byte: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.byte, flag: false },
  },
  debug: {
    log_lvl: {
      schema: logLevel,
      default: 'WARNING',
      flag: { help: 'diagnostics shown: DEBUG, INFO, WARNING, ERROR or CRITICAL (any case)', short: '-l' },
    },
    log_file: {
      schema: z.string(),
      default: '',
      flag: { help: 'append diagnostics to this file instead of stderr' },
    },
  },
} as const satisfies Record<string, Record<string, ConfigKeySpec>>;

type Schema = typeof CONFIG_SCHEMA;
export type Section = keyof Schema;
type Out<E> = E extends { schema: infer Z extends z.ZodMiniType } ? z.output<Z> : never;
export type Config = { [S in Section]: { [K in keyof Schema[S]]: Out<Schema[S][K]> } };

/** Every setting as [section, key, spec], in the table's order. */
export function configKeys(): [section: Section, key: string, spec: ConfigKeySpec][] {
  return Object.entries(CONFIG_SCHEMA).flatMap(([section, keys]) =>
    Object.entries(keys as Record<string, ConfigKeySpec>).map(
      ([key, spec]) => [section as Section, key, spec] as [Section, string, ConfigKeySpec],
    ),
  );
}
