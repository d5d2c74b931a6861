import assert from 'node:assert/strict';
import { readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { run } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const LAUNCHER = new URL('../../bin/joulegate', import.meta.url).pathname;
const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

test('bin/joulegate runs the CLI through a symlink, as npm installs it', async () => {
  const link = join(tempDir(), 'joulegate');
  symlinkSync(LAUNCHER, link);
  const r = await run(link, ['-V'], { cwd: tempDir() });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `${VERSION}\n`);
});

test('NODE_EXTRA_CA_CERTS is skipped by the CLI itself and handed back to the monitored app', async () => {
  const out = tempDir();
  // Node warns at start-up when it cannot load the bundle: the warning shows whether it tried.
  const env = { NODE_EXTRA_CA_CERTS: '/nonexistent/joulegate-ca.pem' };
  const direct = await run(process.execPath, ['-e', '0'], { env });
  assert.match(direct.stderr, /Ignoring extra certs/);
  const r = await run(
    LAUNCHER,
    [
      'monitor',
      '--format',
      'json',
      '--data-out',
      out,
      '--',
      'sh',
      '-c',
      'echo "ca=$NODE_EXTRA_CA_CERTS"; if env | grep -q ^JOULEGATE_SAVED_; then echo leaked; fi',
    ],
    { env, cwd: out },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /Ignoring extra certs/);
  assert.match(r.stdout, /^ca=\/nonexistent\/joulegate-ca\.pem$/m);
  assert.doesNotMatch(r.stdout, /leaked/);
});
