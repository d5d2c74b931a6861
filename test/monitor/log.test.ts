import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/monitor/log.js';
import { runCli } from '../helpers/cli.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const at = () => new Date('2026-12-03T10:00:00.000Z');

describe('monitor diagnostics ([debug] log_lvl, log_file)', () => {
  it('drops messages below the level and writes one timestamped line per message', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'WARNING', stderr: (l) => lines.push(l), now: at });
    log.debug('d');
    log.info('i');
    log.warning('w');
    log.error('e');
    assert.deepEqual(lines, [
      '2026-12-03T10:00:00.000Z joulegate WARNING: w\n',
      '2026-12-03T10:00:00.000Z joulegate ERROR: e\n',
    ]);
    assert.equal(log.enabled('INFO'), false);
    assert.equal(log.enabled('ERROR'), true);
  });

  it('a log file replaces stderr; one that cannot be written falls back to stderr, losing nothing', () => {
    const dir = tempDir();
    const file = join(dir, 'monitor.log');
    const stderr: string[] = [];
    const log = createLogger({ level: 'DEBUG', file, stderr: (l) => stderr.push(l), now: at });
    log.debug('first');
    log.info('second');
    assert.equal(
      readFileSync(file, 'utf8'),
      '2026-12-03T10:00:00.000Z joulegate DEBUG: first\n2026-12-03T10:00:00.000Z joulegate INFO: second\n',
    );
    assert.equal(stderr.length, 0);
    const broken = createLogger({
      level: 'INFO',
      file: join(dir, 'no-such-dir', 'x.log'),
      stderr: (l) => stderr.push(l),
      now: at,
    });
    broken.info('kept');
    broken.info('also kept');
    assert.match(
      stderr[0]!,
      /^joulegate: cannot write log file .*no-such-dir\/x\.log .*; logging to stderr\n$/,
    );
    assert.deepEqual(stderr.slice(1), [
      '2026-12-03T10:00:00.000Z joulegate INFO: kept\n',
      '2026-12-03T10:00:00.000Z joulegate INFO: also kept\n',
    ]);
  });

  it('under monitor: rounds and sources at INFO in the log file, a failing sensor as a WARNING', async () => {
    const root = copyFixture('energy/amd-epyc');
    const out = tempDir();
    const logFile = join(out, 'jg.log');
    const zone1 = join(root, 'sys/class/powercap/intel-rapl:1/energy_uj');
    const flags = `--sampling-period 0.02 --format json --log-lvl INFO --log-file ${logFile}`;
    const r = await runCli(
      [
        'monitor',
        ...flags.split(' '),
        '--data-out',
        out,
        '--',
        'sh',
        '-c',
        `sleep 0.15; echo garbage > ${zone1}; sleep 0.2`,
      ],
      { cwd: out, env: { JOULEGATE_SYSROOT: root } },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /joulegate (INFO|WARNING)/, 'the log file replaces stderr');
    const log = readFileSync(logFile, 'utf8');
    assert.match(log, /joulegate INFO: sampling \d+ series from .*POWERCAP.* every 0\.02 s\n/);
    assert.match(log, /joulegate INFO: round 1 of 1: starting sh -c /);
    assert.match(
      log,
      /joulegate INFO: round 1 of 1: app exited with status 0 after \d+\.\d{3} s, \d+ samples\n/,
    );
    assert.match(log, /joulegate WARNING: CPU_ENERGY\S*1\S*: read failed \(.*\); its samples are gaps/);
    assert.doesNotMatch(log, /DEBUG/);

    // The default level (WARNING) keeps stderr free of INFO lines.
    const quiet = await runCli(['monitor', '--format', 'json', '--data-out', out, '--', 'true'], {
      cwd: out,
      env: { JOULEGATE_SYSROOT: copyFixture('energy/amd-epyc') },
    });
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.doesNotMatch(quiet.stderr, /joulegate INFO/);
  });
});
