import type { Report } from '../monitor/model/report-model.js';
import { ParseError, shortValue } from '../platform/errors.js';

/** Elements of an array of plain values serialised at a time. */
const SLICE = 256;

/**
 * JSON form of a report, in chunks: the same text as `JSON.stringify(report)` and a newline,
 * but a long run's sample arrays are written a slice at a time, never as one string of several
 * MB. JSON has no NaN: gaps are written as null, and on import every null becomes NaN again
 * (reports hold no other nulls), so export → import → export is identical.
 */
export function* jsonChunks(report: Report): Generator<string> {
  yield* isWalked(report) ? chunksOf(report) : [JSON.stringify(report)];
  yield '\n';
}

const hasToJson = (v: object) => typeof (v as { toJSON?: unknown }).toJSON === 'function';
const isPlainObject = (v: object) => {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};
const isLeaf = (v: unknown) => v === null || typeof v !== 'object';

/** Walked in chunks: arrays and plain objects without a toJSON of their own. */
const isWalked = (v: unknown): v is object =>
  v !== null && typeof v === 'object' && !hasToJson(v) && (Array.isArray(v) || isPlainObject(v));

/** What JSON.stringify writes for `value` as the member `key` (undefined: the member is left out). */
function leafText(key: string, value: unknown): string | undefined {
  const own = value !== null && typeof value === 'object' && hasToJson(value);
  return JSON.stringify(own ? (value as { toJSON(key: string): unknown }).toJSON(key) : value);
}

/** Arrays and plain objects are walked; anything else is one JSON.stringify, as it would be whole. */
function* chunksOf(value: object): Generator<string> {
  if (Array.isArray(value)) {
    yield '[';
    if (value.every(isLeaf)) {
      for (let i = 0; i < value.length; i += SLICE) {
        const slice = JSON.stringify(value.slice(i, i + SLICE));
        yield i === 0 ? slice.slice(1, -1) : `,${slice.slice(1, -1)}`;
      }
    } else {
      for (const [i, v] of value.entries()) {
        if (i > 0) yield ',';
        if (isWalked(v)) yield* chunksOf(v);
        else yield leafText(String(i), v) ?? 'null';
      }
    }
    yield ']';
    return;
  }
  yield '{';
  let first = true;
  for (const [k, v] of Object.entries(value)) {
    const walked = isWalked(v);
    // Left out as JSON.stringify leaves them out: undefined, functions, symbols, a toJSON giving undefined.
    const text = walked ? '' : leafText(k, v);
    if (text === undefined) continue;
    yield `${first ? '' : ','}${JSON.stringify(k)}:`;
    first = false;
    if (walked) yield* chunksOf(v);
    else yield text;
  }
  yield '}';
}

export function reportFromJson(text: string, origin: string): Report {
  let data: unknown;
  try {
    data = JSON.parse(text, (_k, v) => (v === null ? Number.NaN : v));
  } catch (err) {
    throw new ParseError(`${shortValue(origin)}: not valid JSON (${(err as Error).message})`);
  }
  const r = data as Partial<Report>;
  if (
    !r ||
    typeof r !== 'object' ||
    r.kind !== 'joulegate-report' ||
    r.version !== 1 ||
    !Array.isArray(r.rounds)
  ) {
    throw new ParseError(
      `${shortValue(origin)}: not a joulegate report (expected kind "joulegate-report", version 1)`,
    );
  }
  return r as Report;
}
