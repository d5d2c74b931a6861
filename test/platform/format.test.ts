import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import {
  bitsToDouble,
  doubleBits,
  FORMAT_NAMES,
  FormatType,
  formatG,
  formatValue,
  parseFormat,
} from '../../src/platform/format.js';
import { needsCompiler } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';

const skip = needsCompiler();

const VALUES = [
  0,
  -0,
  1,
  -1,
  0.1,
  1 / 3,
  -2 / 3,
  123.456,
  100000,
  1e15,
  1e16,
  1e17,
  123456789012345680,
  2 ** 53,
  3.7e9,
  1e21,
  -1e21,
  1e-4,
  1e-5,
  1.5e300,
  -2.5e-300,
  5e-324,
  Number.MAX_VALUE,
  0.000123456789,
  1e23,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.NaN,
];

// The reference is C itself: printf of the same doubles, passed as exact bit patterns.
const C_SOURCE = `
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    uint64_t bits = strtoull(argv[i], NULL, 16);
    double v;
    memcpy(&v, &bits, sizeof v);
    printf("%.16g|%g|%.3g\\n", v, v, v);
  }
  return 0;
}
`;

describe('formatValue / formatG', { skip }, () => {
  let cLines: string[] = [];
  before(() => {
    const dir = tempDir();
    writeFileSync(join(dir, 'fmt.c'), C_SOURCE);
    execFileSync('gcc', ['-O0', '-o', join(dir, 'fmt'), join(dir, 'fmt.c')]);
    const args = VALUES.map((v) => doubleBits(v).toString(16));
    cLines = execFileSync(join(dir, 'fmt'), args, { encoding: 'utf8' }).trim().split('\n');
  });

  it("double matches C's %.16g, and formatG matches %g and %.3g, for every value", () => {
    VALUES.forEach((v, i) => {
      const [g16, g, g3] = cLines[i]!.split('|');
      assert.equal(formatValue(FormatType.Double, v), g16, `%.16g of ${v}`);
      assert.equal(formatG(v), g, `%g of ${v}`);
      assert.equal(formatG(v, 3), g3, `%.3g of ${v}`);
    });
  });

  it('integer prints the truncated value; NaN falls back to %g', () => {
    assert.equal(formatValue(FormatType.Integer, 42.9), '42');
    assert.equal(formatValue(FormatType.Integer, -42.9), '-42');
    assert.equal(formatValue(FormatType.Integer, 2 ** 60), '1152921504606846976');
    assert.equal(formatValue(FormatType.Integer, Number.NaN), 'nan');
    assert.equal(formatValue(FormatType.Integer, Number.POSITIVE_INFINITY), 'inf');
  });

  it('hex pads to 8 digits, wraps negatives modulo 2^64, prints NAN for NaN', () => {
    assert.equal(formatValue(FormatType.Hex, 255), '0x000000ff');
    assert.equal(formatValue(FormatType.Hex, 2 ** 40), '0x10000000000');
    assert.equal(formatValue(FormatType.Hex, -1), '0xffffffffffffffff');
    assert.equal(formatValue(FormatType.Hex, Number.NaN), 'NAN');
  });

  it('raw64 prints the bit pattern and round-trips', () => {
    assert.equal(formatValue(FormatType.Raw64, 1), '0x3ff0000000000000');
    assert.equal(formatValue(FormatType.Raw64, -2), '0xc000000000000000');
    assert.equal(formatValue(FormatType.Raw64, 0), '0x0000000000000000');
    assert.equal(formatValue(FormatType.Raw64, Number.NaN), '0x7ff8000000000000');
    for (const v of [1.5, -1e300, 5e-324]) assert.equal(bitsToDouble(doubleBits(v)), v);
  });

  it('parses format names and rejects unknown ones', () => {
    for (const name of FORMAT_NAMES) assert.equal(FORMAT_NAMES[parseFormat(name)], name);
    assert.throws(() => parseFormat('float'), /unknown format/);
    assert.throws(() => formatValue(7 as FormatType, 1), /invalid format/);
  });
});
