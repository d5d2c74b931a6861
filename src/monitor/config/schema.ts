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
const number = (min: number, max = Number.POSITIVE_INFINITY) =>
  z.coerce.number().check(z.minimum(min), z.maximum(max));
const int = (min: number) =>
  z.coerce.number().check(z.refine(Number.isSafeInteger, 'expected an integer'), z.minimum(min));
export const FORMATS = ['text', 'json', 'csv', 'bench', 'hdf5', 'html'] as const;
const formatList = z.string().check(
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
 * perun's configuration sections and keys (plus the estimate keys joulegate adds), each with its
 * validator and default. One table drives parsing, validation, env names and `showconf`.
 */
export const CONFIG_SCHEMA = {
  'post-processing': {
    power_overhead: { schema: number(0), default: '0' },
    pue: { schema: number(1), default: '1.0' },
    emissions_factor: { schema: number(0), default: '230.0' },
    price_factor: { schema: number(0), default: '0.2678' },
    price_unit: { schema: z.string().check(z.minLength(1)), default: '€' },
  },
  monitor: {
    sampling_period: { schema: number(0.01), default: '1' },
    include_backends: { schema: regexList, default: '' },
    include_sensors: { schema: regexList, default: '' },
    exclude_backends: { schema: regexList, default: '' },
    exclude_sensors: { schema: regexList, default: '' },
    estimate_tdp: { schema: number(0), default: '0' },
    estimate_threads: { schema: int(0), default: '0' },
  },
  output: {
    app_name: { schema: z.string(), default: '' },
    run_id: {
      schema: z.string().check(z.regex(/^[\w.:-]*$/, 'only letters, digits, _ . : - allowed')),
      default: '',
    },
    format: { schema: formatList, default: 'text' },
    data_out: { schema: z.string().check(z.minLength(1)), default: './joulegate_results' },
  },
  benchmarking: {
    rounds: { schema: int(1), default: '1' },
    warmup_rounds: { schema: int(0), default: '0' },
    metrics: { schema: metricList, default: 'runtime,energy' },
    region_metrics: { schema: metricList, default: 'runtime,energy' },
  },
  'benchmarking.units': {
    joule: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.joule },
    second: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.second },
    percent: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.percent },
    watt: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.watt },
    byte: { schema: magnitude, default: BENCH_UNIT_DEFAULTS.byte },
  },
  debug: {
    log_lvl: { schema: logLevel, default: 'WARNING' },
    log_file: { schema: z.string(), default: '' },
  },
} as const;

type Schema = typeof CONFIG_SCHEMA;
export type Section = keyof Schema;
type Out<E> = E extends { schema: infer Z extends z.ZodMiniType } ? z.output<Z> : never;
export type Config = { [S in Section]: { [K in keyof Schema[S]]: Out<Schema[S][K]> } };
