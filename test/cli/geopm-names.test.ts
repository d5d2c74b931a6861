import assert from 'node:assert/strict';
import { accessSync, constants, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { run, runCli } from '../helpers/cli.js';
import { needsAdmin } from '../helpers/requirements.js';

const admin = needsAdmin();

// bin/geopmread and its siblings: GEOPM's command names for joulegate's read, write, session and
// access, with the same flags and output, so GEOPM users' scripts run unchanged.
const BIN = new URL('../../bin/', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  bin: Record<string, string>;
};
const TOOLS = { geopmread: 'read', geopmwrite: 'write', geopmsession: 'session', geopmaccess: 'access' };

test('the package installs each GEOPM command name as an executable', () => {
  for (const tool of Object.keys(TOOLS)) {
    assert.equal(pkg.bin[tool], `bin/${tool}`);
    accessSync(`${BIN}${tool}`, constants.X_OK);
  }
});

test('each GEOPM name prints its usage under that name, with the subcommand options', async () => {
  for (const [tool, sub] of Object.entries(TOOLS)) {
    const viaGeopm = await run(`${BIN}${tool}`, ['--help']);
    const viaJoulegate = await runCli([sub, '--help']);
    assert.equal(viaGeopm.code, 0, viaGeopm.stderr);
    assert.match(viaGeopm.stdout, new RegExp(`^Usage: ${tool} \\[options\\]`));
    // Same options and description as the subcommand: only the usage line differs.
    const body = (text: string) => text.split('\n').slice(1).join('\n');
    assert.equal(body(viaGeopm.stdout), body(viaJoulegate.stdout), tool);
  }
});

test('geopmread gives the same output and exit status as joulegate read', { skip: admin }, async () => {
  const list = await run(`${BIN}geopmread`, []);
  assert.equal(list.code, 0, list.stderr);
  assert.equal(list.stdout, (await runCli(['read'])).stdout);
  assert.match(list.stdout, /^TIME$/m);
  const value = await run(`${BIN}geopmread`, ['TIME', 'board', '0']);
  assert.equal(value.code, 0, value.stderr);
  assert.ok(Number(value.stdout.trim()) >= 0, value.stdout);
  const bad = await run(`${BIN}geopmread`, ['NO_SUCH_SIGNAL', 'board', '0']);
  assert.equal(bad.code, 22, 'EINVAL, as geopmread');
  assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
  const badOption = await run(`${BIN}geopmread`, ['--no-such-option']);
  assert.equal(badOption.code, 22);
});

test('geopmsession samples a request read from stdin', async () => {
  const r = await run(`${BIN}geopmsession`, [], { input: 'TIME board 0\n' });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^"TIME"\n\d+(\.\d+)?(e-?\d+)?\n$/);
});

test('a subcommand that is not a GEOPM tool is refused in one line', async () => {
  const r = await runCli(['read'], { env: { JOULEGATE_AS_GEOPM_TOOL: 'geopmmonitor' } });
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /^Error: geopmmonitor is not one of geopmread, geopmwrite, geopmsession, geopmaccess\n$/,
  );
});
