import { InvalidArgumentError } from '../../platform/errors.js';
import type { FieldFunction } from './schema.js';

/** Bit layout and value function of one MSR field; `scale` is scalar × unit register value. */
export interface FieldCodec {
  beginBit: number;
  endBit: number;
  fn: FieldFunction;
  scale: number;
}

export function fieldWidth(c: Pick<FieldCodec, 'beginBit' | 'endBit'>): number {
  return c.endBit - c.beginBit + 1;
}

function mask(width: number): bigint {
  return (1n << BigInt(width)) - 1n;
}

/** The field's bits, shifted down. */
export function extractBits(register: bigint, c: Pick<FieldCodec, 'beginBit' | 'endBit'>): bigint {
  return (register >> BigInt(c.beginBit)) & mask(fieldWidth(c));
}

/** The register with the field's bits replaced and every other bit left as it was. */
export function insertBits(
  register: bigint,
  c: Pick<FieldCodec, 'beginBit' | 'endBit'>,
  bits: bigint,
): bigint {
  const m = mask(fieldWidth(c));
  if (bits < 0n || bits > m)
    throw new RangeError(`field value ${bits} does not fit in ${fieldWidth(c)} bits`);
  const shift = BigInt(c.beginBit);
  return BigInt.asUintN(64, (register & ~(m << shift)) | (bits << shift));
}

/** 7-bit float (RAPL time windows): 2^Y × (1 + Z/4), Y = bits 4:0, Z = bits 6:5. */
function sevenBitFloat(bits: bigint): number {
  const y = Number(bits & 0x1fn);
  const z = Number((bits >> 5n) & 0x3n);
  return 2 ** y * (1 + z / 4);
}

/** Field bits → value in SI units (overflow counters are wrap-corrected by the caller first). */
export function decodeField(bits: bigint, c: FieldCodec): number {
  switch (c.fn) {
    case 'scale':
    case 'overflow':
      return Number(bits) * c.scale;
    case 'logic':
      return Number(bits);
    case 'log_half':
      return c.scale * 2 ** -Number(bits);
    case '7_bit_float':
      return c.scale * sevenBitFloat(bits);
  }
}

/**
 * Value → field bits, the nearest representable setting. A value outside what the field can
 * hold is refused (InvalidArgumentError), so nothing is written.
 */
export function encodeField(value: number, c: FieldCodec, what: string): bigint {
  const width = fieldWidth(c);
  const max = mask(width);
  if (!Number.isFinite(value)) throw new InvalidArgumentError(`${what}: invalid value ${value}`);
  let bits: bigint;
  switch (c.fn) {
    case 'scale':
    case 'overflow':
      bits = wholeBits(Math.round(value / c.scale));
      break;
    case 'logic':
      if (!Number.isInteger(value))
        throw new InvalidArgumentError(`${what}: expected an integer, got ${value}; nothing written`);
      bits = BigInt(value);
      break;
    case 'log_half':
      if (value <= 0)
        throw new InvalidArgumentError(`${what}: expected a value above 0, got ${value}; nothing written`);
      bits = wholeBits(Math.round(-Math.log2(value / c.scale)));
      break;
    case '7_bit_float':
      bits = nearestSevenBitFloat(value / c.scale, what);
      break;
  }
  if (bits < 0n || bits > max) {
    const lo = decodeField(0n, c);
    const hi = decodeField(c.fn === 'log_half' ? 0n : max, c);
    throw new InvalidArgumentError(
      `${what}: ${value} is outside what the ${width}-bit field holds (${Math.min(lo, hi)}..${Math.max(lo, hi)}); nothing written`,
    );
  }
  return bits;
}

/** A rounded field value as bits; one that overflowed to ±Infinity is out of range (-1). */
function wholeBits(rounded: number): bigint {
  return Number.isFinite(rounded) ? BigInt(rounded) : -1n;
}

function nearestSevenBitFloat(target: number, what: string): bigint {
  if (target <= 0)
    throw new InvalidArgumentError(`${what}: expected a time above 0, got ${target}; nothing written`);
  if (target > sevenBitFloat(0x7fn) * 1.125 || target < 0.875) {
    return -1n; // reported as out of range by the caller
  }
  let best = 0n;
  let bestErr = Number.POSITIVE_INFINITY;
  for (let code = 0n; code < 128n; code++) {
    const err = Math.abs(sevenBitFloat(code) - target);
    if (err < bestErr) {
      best = code;
      bestErr = err;
    }
  }
  return best;
}
