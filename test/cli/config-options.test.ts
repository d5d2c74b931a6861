import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Command } from 'commander';
import { addConfigOptions } from '../../src/cli/config-options.js';
import { type ConfigKeySpec, configKeys } from '../../src/monitor/config/schema.js';

const perunNamesOf = (spec: ConfigKeySpec) => (spec.flag ? (spec.flag.perunNames ?? []) : []);

/** The setting a long flag spells, with dashes or underscores. */
const keyOfFlag = (long: string) => long.replace(/^--/, '').replace(/-/g, '_');

describe('config flags come from the config schema', () => {
  const options = addConfigOptions(new Command()).options.filter(
    (o) => o.long !== '--config' && o.long !== '--configuration',
  );
  const shown = options.filter((o) => !o.hidden);
  const hidden = options.filter((o) => o.hidden);
  const withFlag = configKeys().filter(([, , spec]) => spec.flag !== false);

  test('every schema key with a flag has exactly one shown flag, named after it', () => {
    assert.ok(withFlag.length > 0);
    for (const [section, key] of withFlag) {
      const flags = shown.filter((o) => keyOfFlag(o.long ?? '') === key);
      assert.equal(
        flags.length,
        1,
        `[${section}] ${key}: ${flags.map((o) => o.flags).join(', ') || 'no flag'}`,
      );
    }
  });

  test('every shown flag sets one schema key, and keys marked file-only have none', () => {
    const flagged = new Set(withFlag.map(([, key]) => key));
    for (const o of shown) assert.ok(flagged.has(keyOfFlag(o.long ?? '')), `${o.flags} sets no schema key`);
    assert.equal(shown.length, flagged.size);
    for (const [section, key, spec] of configKeys()) {
      assert.notEqual(spec.flag, undefined, `[${section}] ${key} says neither its flag nor false`);
      if (spec.flag === false)
        assert.ok(!options.some((o) => keyOfFlag(o.long ?? '') === key), `[${section}] ${key} has a flag`);
    }
  });

  test("each hidden spelling is the underscore form or one of perun's names of a flagged key", () => {
    for (const o of hidden) {
      const name = (o.long ?? '').replace(/^--/, '');
      const owners = withFlag.filter(
        ([, key, spec]) => (key === name && key.includes('_')) || perunNamesOf(spec).includes(name),
      );
      assert.equal(owners.length, 1, `${o.flags} belongs to ${owners.length} keys`);
    }
  });

  test('only the keys asked for get flags', () => {
    const only = addConfigOptions(new Command(), ['log_lvl']).options.filter((o) => !o.hidden);
    assert.deepEqual(
      only.map((o) => o.flags),
      ['-c, --config <file>', '-l, --log-lvl <value>'],
    );
  });
});
