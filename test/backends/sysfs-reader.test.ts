import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSigned, parseUnsigned, withoutPadding } from '../../src/backends/sysfs-reader.js';

/** A value as a page-sized copy of a sysfs file holds it: the kernel's text, then NULs to 4096 bytes. */
const padded = (text: string) => text + '\0'.repeat(4096 - text.length);

test('a sysfs value padded with NUL bytes (a page-sized copy) reads as the value', () => {
  assert.equal(withoutPadding(padded('amdgpu\n')), 'amdgpu\n');
  assert.equal(withoutPadding('edge\n'), 'edge\n');
  assert.equal(parseSigned(padded('56000\n'), 'temp1_input'), 56000);
  assert.equal(parseSigned(padded('-273150\n'), 'temp1_crit_hyst'), -273150);
  assert.equal(parseUnsigned(padded('36000000\n'), 'power1_average'), 36000000n);
  assert.equal(parseUnsigned('0\0', 'energy1_input'), 0n);
});

test('NULs anywhere but at the end, or nothing but NULs, stay garbage', () => {
  assert.throws(() => parseSigned(padded(''), 'uevent'), /expected an integer, found ""/);
  assert.throws(() => parseUnsigned(padded(''), 'x'), /expected an unsigned integer/);
  assert.throws(() => parseSigned(`12\x003\n`, 'x'), /expected an integer/);
  assert.throws(() => parseSigned(`\x0012\n`, 'x'), /expected an integer/);
  assert.throws(() => parseSigned(padded('56000\n\0x'), 'x'), /expected an integer/);
  assert.throws(() => parseUnsigned(padded('1.5\n'), 'x'), /expected an unsigned integer/);
});
