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
      'Error: -c/--config and -l/--log-lvl before a subcommand apply to monitor, showconf, job-report, sensors, not to read\n',
    );
    const bad = await runCli(['-l', 'LOUD', 'showconf']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^Error: .*log_lvl = "LOUD".*\n$/);
  });
});

/** `sensors` rows as [sensor, source]. */
const sensorRows = (stdout: string) =>
  [...stdout.matchAll(/^\|\s*([^|\s]+)\s*\|\s*([^|\s]+)\s*\|/gm)]
    .map((m) => [m[1]!, m[2]!] as const)
    .filter(([s]) => s !== 'Sensor' && !s.startsWith('-') && !s.startsWith(':'));

describe("perun's flags and names", { skip }, () => {
  const rapl = copyFixture('energy/amd-epyc');
  const raplEnv = { JOULEGATE_SYSROOT: rapl };

  it('monitor -b/--binary starts CMD as given: a .py file is not handed to python3', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'plain.py'), 'print("python ran")\n');
    // As perun's Popen: a bare name is looked up on PATH, a path must be executable.
    for (const [flag, script, status] of [
      ['-b', 'plain.py', 127],
      ['--binary', './plain.py', 126],
    ] as const) {
      const r = await runCli(['monitor', flag, '--data_out', dir, '-f', 'json', script], { cwd: dir, env });
      assert.equal(r.code, status, `${flag} ${script}\n${r.stderr}`);
      assert.doesNotMatch(r.stdout, /python ran/);
      assert.match(r.stderr, /^Error: .*plain\.py/m);
    }
    const bin = await runCli(['monitor', '-b', '--data_out', dir, '-f', 'json', '-n', 'bin', 'echo', 'hi'], {
      cwd: dir,
      env,
    });
    assert.equal(bin.code, 0, bin.stderr);
    assert.match(bin.stdout, /^hi$/m);
    assert.ok(listing(dir).some((f) => /^bin_.*\.json$/.test(f)));
  });

  it("sensors --active takes perun's backend and sensor names; --by_rank is --all (one rank)", async () => {
    const active = async (e: Record<string, string>, ...args: string[]) => {
      const r = await runCli(['sensors', '--active', ...args], { env: e });
      assert.equal(r.code, 0, r.stderr);
      return sensorRows(r.stdout);
    };
    assert.deepEqual(await active(raplEnv, '--include_backends', 'powercap_rapl'), [
      ['CPU_ENERGY-package-0', 'POWERCAP'],
      ['CPU_ENERGY-package-1', 'POWERCAP'],
    ]);
    assert.deepEqual(await active(raplEnv, '--include_sensors', 'cpu_1_package-1'), [
      ['CPU_ENERGY-package-1', 'POWERCAP'],
    ]);
    assert.deepEqual(await active(env, '--include_sensors', 'CPU_USAGE_0 RAM_USAGE'), [
      ['CPU_UTILIZATION', 'PROCFS'],
      ['PROCFS::MEMORY_USED', 'PROCFS'],
    ]);
    const psutil = await active(env, '--include_backends', 'psutil');
    assert.equal(psutil.length, 6);
    assert.ok(psutil.every(([, source]) => source === 'PROCFS'));
    // The configuration file's filters, as perun's --active reads them.
    const dir = tempDir();
    writeFileSync(join(dir, '.perun.ini'), '[monitor]\nexclude_sensors = ^DISK_ NET_\n');
    const fromFile = await runCli(['sensors', '--active'], { cwd: dir, env: { ...env, HOME: tempDir() } });
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.deepEqual(
      sensorRows(fromFile.stdout).map(([s]) => s),
      ['CPU_UTILIZATION', 'PROCFS::MEMORY_USED'],
    );
    const all = await runCli(['sensors', '--all'], { env });
    const byRank = await runCli(['sensors', '--by_rank'], { env });
    assert.equal(byRank.code, 0, byRank.stderr);
    assert.equal(byRank.stdout, all.stdout);
    const both = await runCli(['sensors', '--all', '--active'], { env });
    assert.equal(both.code, 1);
    assert.equal(both.stderr, 'Error: sensors: --all, --by_rank and --active exclude each other\n');
  });

  it('a run whose filters leave nothing to sample fails before the app starts, naming the sensors', async () => {
    const dir = tempDir();
    for (const args of [
      ['--exclude_backends', 'Intel RAPL'],
      ['--include_backends', 'nvlm'],
      ['--include_sensors', 'CUDA:0_POWER'],
    ]) {
      const e = args[1] === 'Intel RAPL' ? raplEnv : env;
      const r = await runCli(['monitor', ...args, '--data_out', dir, '--', 'touch', 'ran'], {
        cwd: dir,
        env: e,
      });
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(
        r.stderr,
        /^Error: \[monitor\] the include\/exclude settings leave nothing to sample on this host; its sensors: .+\n$/m,
      );
      assert.match(
        r.stderr,
        e === raplEnv ? /CPU_ENERGY-package-0 \(POWERCAP; perun: cpu_0_package-0\)/ : /RAM_USAGE/,
      );
      assert.deepEqual(listing(dir), [], 'the app never ran, no report was written');
    }
    const typo = await runCli(
      ['monitor', '--include_backends', 'psutl', '--data_out', dir, '--', 'touch', 'ran'],
      {
        cwd: dir,
        env,
      },
    );
    assert.equal(typo.code, 1);
    // The error is one line, the last (a user without the daemon is first warned it is unreachable).
    assert.match(
      typo.stderr,
      /(^|\n)Error: \[monitor\] include_backends: "psutl" names no backend \(joulegate's: .*PROCFS.*; perun's: .*psutil.*\)\n$/,
    );
    assert.deepEqual(listing(dir), []);
    // perun's GPU sensor on a host without one: a warning; the rest is sampled.
    const some = await runCli(
      [
        'monitor',
        '--include_sensors',
        'CUDA:0_POWER RAM_USAGE',
        '-f',
        'json',
        '--data_out',
        dir,
        '-n',
        'some',
        '--',
        'true',
      ],
      { cwd: dir, env },
    );
    assert.equal(some.code, 0, some.stderr);
    assert.match(some.stderr, /include_sensors: "CUDA:0_POWER" matches no sensor on this host/);
    const report = JSON.parse(readFileSync(join(dir, listing(dir)[0]!), 'utf8')) as {
      series: { id: string }[];
    };
    assert.deepEqual(
      report.series.map((s) => s.id),
      ['PROCFS::MEMORY_USED'],
    );
  });

  it('-f pickle is refused in one line naming the formats; --run_id SLURM outside a job is the start time', async () => {
    const dir = tempDir();
    const pickle = await runCli(['monitor', '-f', 'pickle', '--data_out', dir, '--', 'touch', 'ran'], {
      cwd: dir,
      env,
    });
    assert.equal(pickle.code, 1);
    assert.match(
      pickle.stderr,
      /^Error: .*pickle is perun's Python pickle .*use hdf5.*expected one or more of text, json, csv, bench, hdf5, html\n$/,
    );
    assert.deepEqual(listing(dir), []);
    const outside = await runCli(
      ['monitor', '--run_id', 'SLURM', '-n', 'job', '-f', 'json', '--data_out', dir, '--', 'true'],
      {
        cwd: dir,
        env: { ...env, SLURM_JOB_ID: undefined },
      },
    );
    assert.equal(outside.code, 0, outside.stderr);
    assert.match(
      outside.stderr,
      /run_id = SLURM but SLURM_JOB_ID is not set: the run id is the start time, as perun does/,
    );
    const inside = await runCli(
      ['monitor', '--run_id', 'SLURM', '-n', 'job', '-f', 'json', '--data_out', dir, '--', 'true'],
      {
        cwd: dir,
        env: { ...env, SLURM_JOB_ID: '777' },
      },
    );
    assert.equal(inside.code, 0, inside.stderr);
    assert.deepEqual(
      listing(dir)
        .map((f) => f.replace(/\d{4}-\d\d-\d\dT[\d-]+/, 'DATE'))
        .sort(),
      ['job_777.json', 'job_DATE.json'],
    );
    const exp = await runCli(['export', join(dir, 'job_777.json'), 'pickle']);
    assert.equal(exp.code, 1);
    assert.match(
      exp.stderr,
      /^Error: pickle is perun's Python pickle .* \(expected one of text, json, csv, bench, html, hdf5\)\n$/,
    );
  });
});
