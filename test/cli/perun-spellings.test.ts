import assert from 'node:assert/strict';
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { needsTool } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const skip = needsTool('python3');

/** perun's users type perun's flags, scripts without an interpreter, and lower-case levels. */
const ROOT = copyFixture('vm-1s4c');
const env = { JOULEGATE_SYSROOT: ROOT };
const listing = (dir: string) => readdirSync(dir).sort();

describe("monitor takes perun's spellings", { skip }, () => {
  it('lists -f/-n/-i and the underscore forms in --help', async () => {
    const r = await runCli(['monitor', '--help']);
    assert.equal(r.code, 0, r.stderr);
    for (const flag of [
      /-f, --format <value>/,
      /-n, --app-name <value>/,
      /-i, --run-id <value>/,
      /-l, --log-lvl <value>/,
      /also --data_out/,
      /also\s+--sampling_period/,
      /also\s+--bench_metrics/,
    ])
      assert.match(r.stdout, flag);
  });

  it('runs a non-executable script.py with python3, passing its arguments, named after it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'train.py'), 'import sys\nprint("argv", sys.argv[1:])\n');
    const r = await runCli(
      ['monitor', '--data_out', 'res', '-f', 'json', '--sampling_period', '0.05', 'train.py', 'a', '--b'],
      { cwd: dir, env },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /argv \['a', '--b'\]/);
    const [json] = listing(join(dir, 'res'));
    assert.match(json!, /^train_.*\.json$/);
    const report = JSON.parse(readFileSync(join(dir, 'res', json!), 'utf8')) as { app: string };
    assert.equal(report.app, 'train');
  });

  it('names `python3 -u script.py` after the script and takes -n/-i/--log_lvl in lower case', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'fit.py'), 'print("fit")\n');
    const named = await runCli(
      ['monitor', '--data_out', dir, '-f', 'json', '--', 'python3', '-u', 'fit.py'],
      {
        cwd: dir,
        env,
      },
    );
    assert.equal(named.code, 0, named.stderr);
    assert.ok(
      listing(dir).some((f) => /^fit_.*\.json$/.test(f)),
      listing(dir).join(' '),
    );
    const r = await runCli(
      ['monitor', '--data_out', dir, '-f', 'text', '-n', 'myapp', '-i', 'r1', '--log_lvl', 'info', 'fit.py'],
      { cwd: dir, env },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.ok(listing(dir).includes('myapp_r1.txt'), listing(dir).join(' '));
    assert.match(r.stderr, / INFO: round 1 of 1: starting python3 fit\.py/);
    const warn = await runCli(['monitor', '--log-lvl', 'Warn', '--data-out', dir, '--', 'true'], { env });
    assert.equal(warn.code, 0, warn.stderr);
    const bad = await runCli(['monitor', '--log-lvl', 'loud', '--data-out', dir, '--', 'true'], { env });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: command line: \[debug\] log_lvl = "loud": .*\n$/);
  });

  it('runs job.sh with sh unless executable, and an executable script by its path', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'job.sh'), 'echo "sh-ran $1"\n');
    writeFileSync(join(dir, 'exe.py'), '#!/bin/sh\necho "shebang-ran $1"\n');
    chmodSync(join(dir, 'exe.py'), 0o755);
    const sh = await runCli(['monitor', '--data_out', dir, 'job.sh', 'x'], { cwd: dir, env });
    assert.equal(sh.code, 0, sh.stderr);
    assert.match(sh.stdout, /^sh-ran x$/m);
    const exe = await runCli(['monitor', '--data_out', dir, 'exe.py', 'y'], { cwd: dir, env });
    assert.equal(exe.code, 0, exe.stderr);
    assert.match(exe.stdout, /^shebang-ran y$/m, 'the shebang, not python3, ran it');
  });
});

describe("export takes perun's IN OUT FMT next to IN FMT", { skip }, () => {
  it('writes into OUT (created) and, without OUT, next to the input', async () => {
    const dir = tempDir();
    const r = await runCli(
      ['monitor', '--data_out', dir, '-f', 'json', '-n', 'ex', '-i', 'r1', '--', 'true'],
      {
        env,
      },
    );
    assert.equal(r.code, 0, r.stderr);
    const json = join(dir, 'ex_r1.json');
    const perunForm = await runCli(['export', json, join(dir, 'out'), 'csv']);
    assert.equal(perunForm.code, 0, perunForm.stderr);
    assert.equal(perunForm.stdout, `${join(dir, 'out', 'ex_r1.csv')}\n`);
    const ours = await runCli(['export', json, 'text']);
    assert.equal(ours.code, 0, ours.stderr);
    assert.equal(ours.stdout, `${join(dir, 'ex_r1.txt')}\n`);
    const bad = await runCli(['export', json, join(dir, 'out'), 'docx']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: unknown format docx \(expected one of .*\)\n$/);
    const help = await runCli(['export', '--help']);
    assert.match(help.stdout, /export \[options\] <file> \[out_dir\] <format>/);
  });
});

describe("perun's global options before the subcommand", { skip }, () => {
  it('-l/--log_lvl and -c before monitor or showconf apply to it; a flag after the subcommand wins', async () => {
    const dir = tempDir();
    const debug = await runCli(['-l', 'debug', 'monitor', '--data_out', dir, '-f', 'json', '--', 'true'], {
      cwd: dir,
      env,
    });
    assert.equal(debug.code, 0, debug.stderr);
    assert.match(debug.stderr, / DEBUG: series /, 'the global -l debug reached the monitor');
    const quiet = await runCli(['-l', 'debug', 'monitor', '-l', 'error', '--data_out', dir, '--', 'true'], {
      cwd: dir,
      env,
    });
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.doesNotMatch(quiet.stderr, /DEBUG|INFO/, "monitor's own -l error wins");

    writeFileSync(join(dir, 'site.ini'), '[post-processing]\npue = 1.7\n');
    const conf = await runCli(['--log_lvl', 'ERROR', '--configuration', 'site.ini', 'showconf'], {
      cwd: dir,
    });
    assert.equal(conf.code, 0, conf.stderr);
    assert.match(conf.stdout, /^log_lvl = ERROR$/m);
    assert.match(conf.stdout, /^pue = 1.7$/m);
  });

  it('are refused, in one line, before a subcommand that takes no configuration', async () => {
    const r = await runCli(['-l', 'DEBUG', 'read', 'TIME', 'board', '0'], { env });
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      'Error: -c/--config and -l/--log-lvl before a subcommand apply to monitor, showconf, job-report, not to read\n',
    );
    const bad = await runCli(['-l', 'LOUD', 'showconf']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: .*log_lvl = "LOUD".*\n$/);
  });
});
