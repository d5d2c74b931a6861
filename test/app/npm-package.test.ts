import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { run } from '../helpers/cli.js';
import { needsTool } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';

/*
 * The npm package as a user gets it (docs/packaging.md): `npm pack` of this checkout, installed
 * globally into an empty prefix. npm fetches the dependencies (from its cache when it has them).
 */

const REPO = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );
}

test('npm pack + a global install into an empty prefix: the commands run, npm warns of no install scripts', {
  skip: needsTool('npm', 'tar'),
  timeout: 600_000,
}, async () => {
  const work = tempDir('jg-npm-');
  // dist/ is built (npm test builds first): prepack only takes `prepare` out of the manifest.
  const pack = await run('npm', ['pack', '--pack-destination', work], {
    cwd: REPO,
    env: { JOULEGATE_PACK_SKIP_BUILD: '1' },
    timeoutMs: 300_000,
  });
  assert.equal(pack.code, 0, pack.stderr);
  const tarball = join(work, pack.stdout.trim().split('\n').pop()!);
  assert.doesNotMatch(readFileSync(join(REPO, 'package.json'), 'utf8'), /^$/, 'package.json restored');
  assert.match(readFileSync(join(REPO, 'package.json'), 'utf8'), /"prepare":/, 'the checkout keeps prepare');

  const unpacked = join(work, 'unpacked');
  assert.equal((await run('mkdir', [unpacked])).code, 0);
  assert.equal((await run('tar', ['-xzf', tarball, '-C', unpacked])).code, 0);
  const files = filesUnder(join(unpacked, 'package'));
  const manifest = JSON.parse(readFileSync(join(unpacked, 'package/package.json'), 'utf8'));
  assert.equal(manifest.scripts.prepare, undefined, 'the packed manifest has no install script');
  // README's links to docs/ resolve inside the package.
  const readme = readFileSync(join(unpacked, 'package/README.md'), 'utf8');
  for (const m of readme.matchAll(/\]\((docs\/[^)#\s]+)/g))
    assert.ok(statSync(join(unpacked, 'package', m[1]!), { throwIfNoEntry: false }), `${m[1]} not shipped`);
  // No file names the machine it was built on (the code cache did).
  const withPath = files.filter((f) => readFileSync(f).includes(REPO));
  assert.deepEqual(withPath, [], `files holding ${REPO}`);
  for (const bundle of ['joulegate.cjs', 'joulegate-tools.cjs']) {
    assert.ok(
      files.some((f) => f.endsWith(`dist/app/${bundle}.cache`)),
      `code cache of ${bundle} shipped`,
    );
  }

  const prefix = join(work, 'prefix');
  // --prefix also moves npm's global configuration to <prefix>/etc/npmrc: keep the machine's
  // (its registry, proxy and CA settings), as an install into an existing prefix would.
  const globalconfig = (await run('npm', ['config', 'get', 'globalconfig'], { cwd: work })).stdout.trim();
  const install = await run(
    'npm',
    ['install', '--global', `--prefix=${prefix}`, '--prefer-offline', '--no-audit', '--no-fund', tarball],
    { cwd: work, timeoutMs: 300_000, env: { npm_config_globalconfig: globalconfig } },
  );
  assert.equal(install.code, 0, install.stderr);
  assert.doesNotMatch(install.stdout + install.stderr, /install.scripts|allowScripts|allow-scripts/i);

  const bin = join(prefix, 'bin');
  const env = { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin` };
  const help = await run(join(bin, 'joulegate'), ['--help'], { env, cwd: work });
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /monitor/);
  const monitor = await run(
    join(bin, 'joulegate'),
    ['monitor', '--format', 'text', '--data-out', join(work, 'out'), '--', 'true'],
    { env, cwd: work, timeoutMs: 120_000 },
  );
  assert.equal(monitor.code, 0, monitor.stderr);
  // V8 takes the shipped code cache, made elsewhere, in the installed tree (same Node here).
  const cache = await run(join(bin, 'joulegate'), [], { env: { ...env, JOULEGATE_CODE_CACHE_CHECK: '1' } });
  assert.equal(cache.stdout, 'accepted\n', cache.stderr);
  // And the one-shot commands' cache, through GEOPM's name as a script calls it.
  const toolsCache = await run(join(bin, 'geopmsession'), [], {
    env: { ...env, JOULEGATE_CODE_CACHE_CHECK: '1' },
  });
  assert.equal(toolsCache.stdout, 'accepted\n', toolsCache.stderr);
  const daemon = await run(join(bin, 'joulegated'), ['--help'], { env, cwd: work });
  assert.equal(daemon.code, 0, daemon.stderr);
  assert.match(daemon.stdout, /^Usage: joulegated/);
  // koffi (bundled, its binary found without an install script) loads in the installed tree.
  const koffi = await run(
    process.execPath,
    [
      '-e',
      'require(process.argv[1]).sizeof("int")',
      join(prefix, 'lib/node_modules/joulegate/node_modules/koffi'),
    ],
    { env },
  );
  assert.equal(koffi.code, 0, koffi.stderr);
});
