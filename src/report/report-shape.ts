import type { Report } from '../monitor/model/report-model.js';
import { ParseError, shortValue } from '../platform/errors.js';
import * as z from '../platform/validation.js';

/*
 * The shape every renderer relies on, checked on a report read from a file (JSON or HDF5)
 * before anything renders it: a damaged or hand-made file ends in one line naming the file and
 * the place, not in a TypeError deep in a renderer. Numbers may be NaN (gaps).
 */

const num = z.custom<number>((v) => typeof v === 'number', 'expected a number');
const text = z.string();
const stat = z.object({ mean: num, std: num, min: num, max: num, sum: num });
const texts = z.record(z.string(), text);

const groupMetrics = z.object({
  energy: num,
  power: num,
  method: z.optional(text),
  coverage: z.optional(num),
  util: z.optional(num),
  memory: z.optional(num),
  readBytes: z.optional(num),
  writeBytes: z.optional(num),
});

const hostMetrics = z.object({
  runtime: num,
  energy: num,
  power: num,
  estimatedEnergy: num,
  estimatedPower: num,
  facilityEnergy: num,
  co2: num,
  money: num,
  groups: z.record(z.string(), groupMetrics),
  total: z.optional(
    z.object({
      rule: text,
      boardEnergy: num,
      coveredGroups: z.array(text),
      coveredEnergy: num,
      outsideGroups: z.array(text),
      outsideEnergy: num,
    }),
  ),
});

const regionCall = z.object({
  name: text,
  start: num,
  stop: num,
  depth: num,
  open: z.boolean(),
  runtime: num,
  energy: num,
  power: num,
  estimatedEnergy: num,
  groupEnergy: z.record(z.string(), num),
});

const round = z.object({
  id: text,
  exit: z.object({ status: num, code: num, signal: text }),
  overruns: num,
  times: z.array(num),
  values: z.array(z.array(num)),
  events: z.array(z.object({ name: text, kind: z.enum(['start', 'stop']), t: num })),
  metrics: z.object({ host: hostMetrics, regions: z.array(regionCall), problems: z.array(text) }),
});

const series = z.object({
  id: text,
  signal: text,
  domain: text,
  index: num,
  group: text,
  kind: text,
  backend: text,
});

const report = z.object({
  kind: z.literal('joulegate-report'),
  version: z.literal(1),
  app: text,
  runId: text,
  failed: z.boolean(),
  failure: text,
  created: text,
  host: text,
  metadata: texts,
  config: texts,
  samplingPeriod: num,
  priceUnit: text,
  series: z.array(series),
  sources: z.array(z.object({ group: text, method: text, series: z.array(text), detail: text })),
  unavailable: z.array(z.object({ backend: text, reason: text })),
  warmupRounds: num,
  rounds: z.array(round),
  summary: z.object({
    runtime: stat,
    energy: stat,
    power: stat,
    estimated_energy: stat,
    co2: stat,
    money: stat,
  }),
  regions: z.array(
    z.object({
      name: text,
      callsPerRound: num,
      runtime: stat,
      energy: stat,
      power: stat,
      estimatedEnergy: stat,
    }),
  ),
});

/** Throws one line naming `origin` and the first place where `value` is not a report. */
export function checkReportShape(value: unknown, origin: string): asserts value is Report {
  const parsed = report.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.map(String).join('.') || 'the top level';
    throw new ParseError(
      `${shortValue(origin)}: not a joulegate report: ${shortValue(where)}: ${shortValue(issue.message)}`,
    );
  }
  const r = value as Report;
  for (const [i, round] of r.rounds.entries()) {
    if (round.values.length !== r.series.length)
      throw new ParseError(
        `${shortValue(origin)}: not a joulegate report: rounds.${i} has ${round.values.length} value series for ${r.series.length} sensors`,
      );
    const short = round.values.findIndex((v) => v.length !== round.times.length);
    if (short >= 0)
      throw new ParseError(
        `${shortValue(origin)}: not a joulegate report: rounds.${i}.values.${short} has ${round.values[short]!.length} values for ${round.times.length} times`,
      );
  }
}
