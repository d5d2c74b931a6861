import { DomainType, parseDomain } from '../platform/domains.js';
import { ErrorCode, InvalidArgumentError, JoulegateError } from '../platform/errors.js';

/** errno EINVAL: the exit status geopmread/geopmwrite give for every usage error. */
export const EINVAL = 22;

/**
 * A domain index as typed by a user. Stricter than C's stoi (which accepts "3abc" as 3):
 * anything but a whole decimal integer is rejected so a typo never reads the wrong domain.
 */
export function parseDomainIndex(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^[+-]?\d+$/.test(trimmed)) return undefined;
  const value = Number(trimmed);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** A control setting: a decimal number (with optional exponent) or a 0x hex integer. */
export function parseSetting(text: string): number | undefined {
  const trimmed = text.trim();
  const decimal = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
  const hex = /^0[xX][0-9a-fA-F]+$/;
  if (!decimal.test(trimmed) && !hex.test(trimmed)) return undefined;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : undefined;
}

/** A domain name to its type; unknown names are an InvalidArgumentError naming the choices. */
export function domainTypeOf(name: string): DomainType {
  const domain = parseDomain(name);
  if (domain === DomainType.Invalid) {
    throw new InvalidArgumentError(`unrecognized domain name: "${name}"`);
  }
  return domain;
}

/**
 * Exit status for an error that escaped a command, like GEOPM's uncaught-exception path: the
 * negative error code taken modulo 256 (invalid argument -3 → 253, runtime -1 → 255).
 */
export function exitStatusOf(err: unknown): number {
  const code = err instanceof JoulegateError ? err.code : ErrorCode.Runtime;
  return (256 + code) & 0xff;
}
