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

/**
 * perun's configuration as `perun showconf > .perun.ini` writes it (Python's configparser with
 * perun's defaults): `key = value` with a trailing space after an empty value, a bare key for a
 * setting that is unset, a blank line after each section, and perun's queue_timeout.
 */
const SHOWCONF = [
  '[post-processing]',
  'power_overhead = 0',
  'pue = 1.0',
  'emissions_factor = 230.0',
  'price_factor = 0.2678',
  'price_unit = €',
  '',
  '[monitor]',
  'sampling_period = 1',
  'queue_timeout = 60',
  'include_backends = ',
  'include_sensors = ',
  'exclude_backends = ',
  'exclude_sensors = ',
  '',
  '[output]',
  'app_name',
  'run_id',
  'format = text',
  'data_out = ./perun_results',
  '',
  '[benchmarking]',
  'rounds = 1',
  'warmup_rounds = 0',
  'metrics = runtime,energy',
  'region_metrics = runtime,power',
  '',
  '[benchmarking.units]',
  'joule = k',
  'second = ',
  'percent = ',
  'watt = ',
  'byte = G',
  '',
  '[debug]',
  'log_lvl = WARNING',
  'log_file',
  '',
  '',
].join('\n');

describe("perun's configuration as perun writes it", () => {
  const env = () => ({ HOME: tempDir(), JOULEGATE_SYSROOT: copyFixture('vm-1s4c') });

  it('`perun showconf > .perun.ini`: bare keys are unset, queue_timeout named once and ignored', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, '.perun.ini'), SHOWCONF);
    const e = env();
    const { config, stderr } = await showconf(dir, e);
    assert.equal(
      stderr,
      "joulegate: no ./.joulegate.ini; reading perun's ./.perun.ini (ignored, not joulegate settings: monitor.queue_timeout)\n",
    );
    assert.equal(config.output!.app_name, '');
    assert.equal(config.output!.run_id, '');
    assert.equal(config.debug!.log_file, '');
    assert.equal(config.output!.data_out, './perun_results');
    assert.equal(config.benchmarking!.region_metrics, 'runtime,power');
    assert.equal(config.monitor!.queue_timeout, undefined);
    // Every command reads it: a run named after its command, the report in perun's directory.
    const r = await runCli(['monitor', '-f', 'json', '--', 'true'], { cwd: dir, env: e });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr.match(/queue_timeout/g)?.length, 1, r.stderr);
    assert.match(readdirSync(join(dir, 'perun_results')).join(' '), /^true_.*\.json$/);
  });

  it('the same file given with -c: perun-only settings named once, in one line, and ignored', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'perun.ini'), SHOWCONF.replace('format = text', 'format = csv'));
    const e = env();
    const { config, stderr } = await showconf(dir, e, ['-c', 'perun.ini']);
    assert.equal(
      stderr,
      'joulegate: perun.ini: ignored perun settings joulegate has no use for: monitor.queue_timeout\n',
    );
    assert.equal(config.output!.format, 'csv');
    const r = await runCli(['monitor', '-c', 'perun.ini', '--data_out', 'out', '--', 'true'], {
      cwd: dir,
      env: e,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(readdirSync(join(dir, 'out')).join(' '), /^true_.*\.csv$/);
  });

  it('still refuses a line that is no setting, and a setting joulegate does not know in its own file', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'bad.ini'), '[output]\napp name here\n');
    writeFileSync(join(dir, 'typo.ini'), '[monitor]\nsampling_perod = 1\n');
    const e = env();
    const bad = await runCli(['showconf', '-c', 'bad.ini'], { cwd: dir, env: e });
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      'Error: bad.ini:2: expected "key = value" or "[section]", got "app name here"\n',
    );
    const typo = await runCli(['showconf', '-c', 'typo.ini'], { cwd: dir, env: e });
    assert.equal(typo.code, 1);
    assert.equal(typo.stderr, 'Error: typo.ini: [monitor] unknown key sampling_perod\n');
  });
});
