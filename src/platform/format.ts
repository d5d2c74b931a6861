/** Value formats with GEOPM's enum values (Helper.hpp string_format_e). */
export enum FormatType {
  Double = 0,
  Integer = 1,
  Hex = 2,
  Raw64 = 3,
}

export const FORMAT_NAMES: readonly string[] = ['double', 'integer', 'hex', 'raw64'];

export function parseFormat(name: string): FormatType {
  const idx = FORMAT_NAMES.indexOf(name);
  if (idx < 0) throw new RangeError(`unknown format: ${name}`);
  return idx as FormatType;
}

/** printf("%.Ng") for a double, matching C's choice between fixed and exponent notation. */
export function formatG(value: number, precision = 6): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  const p = precision === 0 ? 1 : precision;
  const exp = Math.floor(Math.log10(Math.abs(Number(value.toExponential(p - 1)))));
  let text: string;
  if (exp < -4 || exp >= p) {
    text = value.toExponential(p - 1);
    let [mant, e] = text.split('e') as [string, string];
    if (mant.includes('.')) mant = mant.replace(/0+$/, '').replace(/\.$/, '');
    const sign = e.startsWith('-') ? '-' : '+';
    const digits = e.replace(/^[+-]/, '').padStart(2, '0');
    return `${mant}e${sign}${digits}`;
  }
  text = value.toFixed(Math.max(0, p - 1 - exp));
  if (text.includes('.')) text = text.replace(/0+$/, '').replace(/\.$/, '');
  return text;
}

function toUint64(value: number): bigint {
  // C's (uint64_t) cast of a double: negative values wrap modulo 2^64.
  return BigInt.asUintN(64, BigInt(Math.trunc(value)));
}

/** Bit pattern of a double, as GEOPM's raw64 format prints it. */
export function doubleBits(value: number): bigint {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value, true);
  return view.getBigUint64(0, true);
}

export function bitsToDouble(bits: bigint): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt.asUintN(64, bits), true);
  return view.getFloat64(0, true);
}

export function formatValue(format: FormatType, value: number): string {
  switch (format) {
    case FormatType.Double:
      return formatG(value, 16);
    case FormatType.Integer:
      if (!Number.isFinite(value)) return formatG(value);
      return BigInt(Math.trunc(value)).toString();
    case FormatType.Hex:
      if (!Number.isFinite(value)) return 'NAN';
      return `0x${toUint64(value).toString(16).padStart(8, '0')}`;
    case FormatType.Raw64:
      return `0x${doubleBits(value).toString(16).padStart(16, '0')}`;
    default:
      throw new RangeError(`invalid format type: ${format}`);
  }
}

/** `a`, `a and b`, `a, b and c`. */
export function listInWords(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
