import { DomainType, domainName } from '../../platform/domains.js';
import { type FormatType, formatValue } from '../../platform/format.js';
import type { ReadRequest } from './requests.js';

/** Column name of a request: `NAME` at board, else `NAME-domain-idx` (trace header and report). */
export function metricName(req: ReadRequest): string {
  return req.domain === DomainType.Board ? req.name : `${req.name}-${domainName(req.domain)}-${req.idx}`;
}

/** The trace header row: every column name in double quotes. */
export function headerRow(requests: readonly ReadRequest[], delimiter: string): string {
  return `${requests.map((r) => `"${metricName(r)}"`).join(delimiter)}\n`;
}

/** One trace row, each value in its signal's format (double %.16g, integer, hex, raw64). */
export function formatRow(
  values: readonly number[],
  formats: readonly FormatType[],
  delimiter: string,
): string {
  if (values.length !== formats.length) {
    throw new RangeError('number of signal values does not match the number of requests');
  }
  return `${values.map((v, i) => formatValue(formats[i]!, v)).join(delimiter)}\n`;
}
