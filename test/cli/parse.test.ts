import assert from 'node:assert/strict';
import { test } from 'node:test';
import { domainTypeOf, exitStatusOf, parseDomainIndex, parseSetting } from '../../src/cli/parse.js';
import { DomainType } from '../../src/platform/domains.js';
import { InvalidArgumentError, JoulegateError, ParseError } from '../../src/platform/errors.js';

test('domain index: whole integers only, signs and surrounding blanks allowed', () => {
  assert.equal(parseDomainIndex('0'), 0);
  assert.equal(parseDomainIndex(' 12 '), 12);
  assert.equal(parseDomainIndex('-1'), -1);
  assert.equal(parseDomainIndex('+3'), 3);
  for (const bad of ['', 'x', '3abc', '1.5', '0x1', '1e3', '99999999999999999999']) {
    assert.equal(parseDomainIndex(bad), undefined, bad);
  }
});

test('setting: decimal with exponent or hex; anything else is rejected', () => {
  assert.equal(parseSetting('2.0e9'), 2e9);
  assert.equal(parseSetting('-5'), -5);
  assert.equal(parseSetting('.5'), 0.5);
  assert.equal(parseSetting('3.'), 3);
  assert.equal(parseSetting('0x10'), 16);
  for (const bad of ['', 'abc', '2GHz', 'nan', 'inf', '1e999', '1,5', '--1']) {
    assert.equal(parseSetting(bad), undefined, bad);
  }
});

test('domain names map to GEOPM domain types; unknown names name the culprit', () => {
  assert.equal(domainTypeOf('board'), DomainType.Board);
  assert.equal(domainTypeOf('package_integrated_gpu'), DomainType.PackageIntegratedGpu);
  assert.throws(
    () => domainTypeOf('socket'),
    (err: Error) => err instanceof InvalidArgumentError && /"socket"/.test(err.message),
  );
});

test('exit status of an escaped error is its GEOPM code modulo 256', () => {
  assert.equal(exitStatusOf(new InvalidArgumentError('x')), 253);
  assert.equal(exitStatusOf(new ParseError('x')), 252);
  assert.equal(exitStatusOf(new JoulegateError('x')), 255);
  assert.equal(exitStatusOf(new Error('x')), 255);
});
