import type { Report } from '../monitor/report-model.js';
import { ParseError } from '../platform/errors.js';

/**
 * JSON form of a report. JSON has no NaN: gaps are written as null, and on import every null
 * becomes NaN again (reports hold no other nulls), so export → import → export is identical.
 */
export function reportToJson(report: Report): string {
  return `${JSON.stringify(report)}\n`;
}

export function reportFromJson(text: string, origin: string): Report {
  let data: unknown;
  try {
    data = JSON.parse(text, (_k, v) => (v === null ? Number.NaN : v));
  } catch (err) {
    throw new ParseError(`${origin}: not valid JSON (${(err as Error).message})`);
  }
  const r = data as Partial<Report>;
  if (
    !r ||
    typeof r !== 'object' ||
    r.kind !== 'joulegate-report' ||
    r.version !== 1 ||
    !Array.isArray(r.rounds)
  ) {
    throw new ParseError(`${origin}: not a joulegate report (expected kind "joulegate-report", version 1)`);
  }
  return r as Report;
}
