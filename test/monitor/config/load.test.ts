import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  configToIni,
  envLayer,
  fileLayers,
  flatLayer,
  parseIni,
  resolveConfig,
} from '../../../src/monitor/config/load.js';
import { runCli } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

function setup() {
  const home = tempDir();
  const project = tempDir();
  mkdirSync(join(home, '.config'));
  writeFileSync(
    join(home, '.config', 'joulegate.ini'),
    '[monitor]\nsampling_period = 2\n[output]\nformat = csv\ndata_out = /from/home\n',
  );
  writeFileSync(
    join(project, '.joulegate.ini'),
    '[monitor]\nsampling_period = 0.5 ; local wins\n[output]\nformat = json\n',
  );
  return { home, project };
}

describe('configuration', () => {
  it('layers defaults < ~/.config < ./.joulegate.ini < env < CLI', () => {
    const { home, project } = setup();
    const files = fileLayers(join(project, '.joulegate.ini'), home);
    let c = resolveConfig(files);
    assert.equal(c.monitor.sampling_period, 0.5);
    assert.equal(c.output.format, 'json');
    assert.equal(c.output.data_out, '/from/home');
    assert.equal(c['post-processing'].pue, 1);
    c = resolveConfig([...files, envLayer({ JOULEGATE_FORMAT: 'bench', JOULEGATE_PUE: '1.2' })]);
    assert.equal(c.output.format, 'bench');
    assert.equal(c['post-processing'].pue, 1.2);
    c = resolveConfig([
      ...files,
      envLayer({ JOULEGATE_FORMAT: 'bench' }),
      flatLayer('command line', { format: 'html' }),
    ]);
    assert.equal(c.output.format, 'html');
  });

  it('names file, section and key of a bad value', () => {
    const dir = tempDir();
    const file = join(dir, 'bad.ini');
    writeFileSync(file, '[post-processing]\npue = 0.5\n');
    assert.throws(
      () => resolveConfig(fileLayers(file, dir)),
      (e: Error) => {
        assert.match(e.message, /bad\.ini: \[post-processing\] pue = "0\.5"/);
        assert.equal(e.message.split('\n').length, 1);
        return true;
      },
    );
    assert.throws(
      () => resolveConfig([envLayer({ JOULEGATE_SAMPLING_PERIOD: '0.001' })]),
      /environment.*\[monitor\] sampling_period/,
    );
    assert.throws(
      () => resolveConfig([envLayer({ JOULEGATE_EXCLUDE_SENSORS: '([' })]),
      /exclude_sensors.*regular expressions/,
    );
    writeFileSync(file, '[monitor]\nno_such_key = 1\n');
    assert.throws(
      () => resolveConfig(fileLayers(file, dir)),
      /bad\.ini: \[monitor\] unknown key no_such_key/,
    );
  });

  it('run_id = SLURM takes $SLURM_JOB_ID, and the start time outside a job', () => {
    const saved = process.env.SLURM_JOB_ID;
    process.env.SLURM_JOB_ID = '4242';
    try {
      assert.equal(resolveConfig([flatLayer('cli', { run_id: 'SLURM' })]).output.run_id, '4242');
      delete process.env.SLURM_JOB_ID;
      // Outside a job, as perun does: the start time (the empty default), with a notice.
      const notices: string[] = [];
      const config = resolveConfig([flatLayer('cli', { run_id: 'SLURM' })], (l) => notices.push(l));
      assert.equal(config.output.run_id, '');
      assert.deepEqual(notices, [
        '[output] run_id = SLURM but SLURM_JOB_ID is not set: the run id is the start time, as perun does',
      ]);
    } finally {
      if (saved === undefined) delete process.env.SLURM_JOB_ID;
      else process.env.SLURM_JOB_ID = saved;
    }
  });

  it('showconf prints INI that reads back to the same configuration', async () => {
    const { home, project } = setup();
    const r = await runCli(['showconf'], { cwd: project, env: { HOME: home, JOULEGATE_PRICE_UNIT: 'USD' } });
    assert.equal(r.code, 0, r.stderr);
    const again = resolveConfig([{ origin: 'showconf', data: parseIni(r.stdout, 'showconf') }]);
    assert.equal(again.monitor.sampling_period, 0.5);
    assert.equal(again['post-processing'].price_unit, 'USD');
    assert.equal(configToIni(again), r.stdout);
    const d = await runCli(['showconf', '--default'], { cwd: project, env: { HOME: home } });
    assert.match(d.stdout, /sampling_period = 1\n/);
    const bad = await runCli(['monitor', '--pue', 'abc', '--', 'true'], {
      cwd: project,
      env: { HOME: home },
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: command line: \[post-processing\] pue = "abc"/);
    assert.doesNotMatch(bad.stderr, /at .*\.js/);
  });
});
