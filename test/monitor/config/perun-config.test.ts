import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseIni } from '../../../src/monitor/config/load.js';
import { runCli } from '../../helpers/cli.js';
import { copyFixture, tempDir } from '../../helpers/tmp.js';

/** perun's users bring their `.perun.ini` and PERUN_* variables. */
const PERUN_INI = `[output]
format = json
data_out = perun_out
[monitor]
sampling_period = 0.05
queue_timeout = 120
[debug]
log_lvl = info
`;
const NOTICE =
  "joulegate: no ./.joulegate.ini; reading perun's ./.perun.ini (ignored, not joulegate settings: monitor.queue_timeout)\n";

/** A project directory with perun's file, and a HOME without configuration. */
function project(files: Record<string, string> = {}) {
  const dir = tempDir();
  writeFileSync(join(dir, '.perun.ini'), PERUN_INI);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return { dir, env: { HOME: tempDir() } };
}

async function showconf(dir: string, env: Record<string, string>, args: string[] = []) {
  const r = await runCli(['showconf', ...args], { cwd: dir, env });
  assert.equal(r.code, 0, r.stderr);
  return { config: parseIni(r.stdout, 'showconf'), stderr: r.stderr };
}

describe("perun's configuration", () => {
  it('reads ./.perun.ini when there is no ./.joulegate.ini, with a one-line notice', async () => {
    const { dir, env } = project();
    const { config, stderr } = await showconf(dir, env);
    assert.equal(stderr, NOTICE);
    assert.equal(config.output!.format, 'json');
    assert.equal(config.monitor!.sampling_period, '0.05');
    assert.equal(config.debug!.log_lvl, 'INFO', 'perun writes levels in any case too');
    const r = await runCli(['monitor', '--', 'true'], {
      cwd: dir,
      env: { ...env, JOULEGATE_SYSROOT: copyFixture('vm-1s4c') },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stderr.startsWith(NOTICE), r.stderr);
    assert.match(readdirSync(join(dir, 'perun_out')).join(' '), /^true_.*\.json$/);
  });

  it('leaves it alone when ./.joulegate.ini exists or -c names a file', async () => {
    const { dir, env } = project({
      '.joulegate.ini': '[output]\nformat = csv\n',
      'other.ini': '[output]\nformat = html\n',
    });
    const own = await showconf(dir, env);
    assert.equal(own.stderr, '');
    assert.equal(own.config.output!.format, 'csv');
    assert.equal(own.config.output!.data_out, './joulegate_results');
    const named = await showconf(join(dir), env, ['-c', 'other.ini']);
    assert.equal(named.stderr, '');
    assert.equal(named.config.output!.format, 'html');
  });

  it('takes PERUN_<KEY> for every setting, below JOULEGATE_<KEY> and the flags', async () => {
    const dir = tempDir();
    const env = { HOME: tempDir(), PERUN_DATA_OUT: '/perun/out', PERUN_FORMAT: 'bench', PERUN_PUE: '1.5' };
    const perun = await showconf(dir, env);
    assert.equal(perun.stderr, '');
    assert.deepEqual(
      [perun.config.output!.data_out, perun.config.output!.format, perun.config['post-processing']!.pue],
      ['/perun/out', 'bench', '1.5'],
    );
    const ours = await showconf(dir, { ...env, JOULEGATE_FORMAT: 'text' });
    assert.equal(ours.config.output!.format, 'text');
    const bad = await runCli(['showconf'], { cwd: dir, env: { ...env, PERUN_PUE: '0.3' } });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: environment \(PERUN_<KEY>\): \[post-processing\] pue = "0\.3": .*\n$/);
  });
});
