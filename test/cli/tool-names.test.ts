import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GEOPM_TOOLS, oneShotCommand } from '../../src/cli/tool-names.js';

const argv = (...args: string[]) => ['node', 'joulegate', ...args];

test('a one-shot command is the first argument, or the command a GEOPM tool name stands for', () => {
  for (const command of ['read', 'write', 'session', 'access'])
    assert.equal(oneShotCommand(argv(command, 'TIME'), undefined), command);
  for (const [tool, command] of Object.entries(GEOPM_TOOLS))
    assert.equal(oneShotCommand(argv('TIME', 'board', '0'), tool), command);
});

test('anything else runs the whole CLI: other commands, options first, help, odd names', () => {
  for (const args of [
    [],
    ['monitor', '--', 'true'],
    ['-c', 'x.ini', 'monitor'],
    ['--help'],
    ['help', 'read'],
  ])
    assert.equal(oneShotCommand(argv(...args), undefined), undefined, args.join(' '));
  for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty'])
    assert.equal(oneShotCommand(argv(name), undefined), undefined, name);
  // A tool name that is not GEOPM's, even one naming a one-shot command, is not one.
  for (const tool of ['geopmfoo', 'read', '__proto__', 'constructor'])
    assert.equal(oneShotCommand(argv('read'), tool), undefined, tool);
});
