import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CLI, run, runCli } from '../../helpers/cli.js';
import { needsAdmin, needsTestUsers } from '../../helpers/requirements.js';
import { FIXTURES, tempDir } from '../../helpers/tmp.js';
import { asUser, ensureUser } from '../../helpers/users.js';

const admin = needsAdmin();

const asTestUsers = needsTestUsers();

const session = (args: string[], input: string) => runCli(['session', ...args], { input });

function lines(text: string): string[] {
  return text.trimEnd().split('\n');
}

test('one immediate sample by default: header then one row', async () => {
  const r = await session([], 'TIME board 0\n');
  assert.equal(r.code, 0, r.stderr);
  const [header, row, ...rest] = lines(r.stdout);
  assert.equal(header, '"TIME"');
  assert.ok(Number(row) > 0, row);
  assert.deepEqual(rest, []);
});

test('-t 1 -p 0.1: header plus ceil(1/0.1)+1 = 11 rows, time increasing', async () => {
  const r = await session(['-t', '1', '-p', '0.1'], 'TIME board 0\n# a comment\nTIME::ELAPSED board *\n');
  assert.equal(r.code, 0, r.stderr);
  const out = lines(r.stdout);
  assert.equal(out[0], '"TIME","TIME::ELAPSED"');
  const rows = out.slice(1).map((l) => l.split(',').map(Number));
  assert.equal(rows.length, 11);
  for (let i = 1; i < rows.length; i++) assert.ok(rows[i]![0]! > rows[i - 1]![0]!);
  // The last row is at or after start + 1 s: deadlines are absolute, not slept after the work.
  assert.ok(rows[10]![0]! - rows[0]![0]! >= 0.99, String(rows[10]![0]! - rows[0]![0]!));
});

test('-n drops the header; -d changes the delimiter; input stops at the first empty line', async () => {
  const r = await session(['-n', '-d', ';'], 'TIME board 0\nTIME board 0\n\nNOT_A_SIGNAL board 0\n');
  assert.equal(r.code, 0, r.stderr);
  const out = lines(r.stdout);
  assert.equal(out.length, 1);
  assert.match(out[0]!, /^[\d.e-]+;[\d.e-]+$/);
  const both = await session(['-n', '--print-header'], 'TIME board 0\n');
  assert.equal(both.code, 2);
  assert.match(both.stderr, /not allowed with argument --print-header/);
});

test('session error texts: "Error: <msg>" and a blank line, exit 255', { skip: admin }, async () => {
  const cases: [string[], string, string][] = [
    [[], 'TIME board\n', 'Read request must be three words: "TIME board"'],
    [[], '  TIME   board 0 0  \n', 'Read request must be three words: "TIME   board 0 0"'],
    [[], 'TIME socket 0\n', 'Unable to convert values into a read request: "TIME socket 0"'],
    [[], 'TIME board one\n', 'Unable to convert values into a read request: "TIME board one"'],
    [[], '', 'Empty request stream.'],
    [[], '\nTIME board 0\n', 'Empty request stream.'],
    [[], '# nothing\n', 'Empty request stream.'],
    [[], 'NO_SUCH_SIGNAL board 0\n', 'no support for signal NO_SUCH_SIGNAL'],
    [
      [],
      'TIME board 2\n',
      'Request index in "TIME board 2" is out of range. Acceptable board indices are non-negative integers up to and including 0',
    ],
    [['-p', '1'], 'TIME board 0\n', 'Specified a period that is greater than the total run time'],
    [['-t', '100000', '-p', '90000'], 'TIME board 0\n', 'Specified a period greater than 24 hours'],
    [['-t', '-1', '-p', '-2'], 'TIME board 0\n', 'Specified a negative run time or period'],
    [['-s', '-1', '-r', '-', '-o', '/dev/null'], 'TIME board 0\n', 'Specified report samples is negative'],
    [['-f', 'xml'], 'TIME board 0\n', 'Invalid report format: xml'],
    [
      ['-s', '2', '-r', '-'],
      'TIME board 0\n',
      'When using the --report-samples option the trace and report output must differ, use --report-out or --trace-out to specify a unique value',
    ],
    [
      ['-o', '/nonexistent-dir/trace.csv'],
      'TIME board 0\n',
      'cannot open /nonexistent-dir/trace.csv for writing: ',
    ],
  ];
  for (const [args, input, message] of cases) {
    const r = await session(args, input);
    assert.equal(r.code, 255, `${args.join(' ')} ${JSON.stringify(input)}: ${r.stderr}`);
    assert.ok(r.stderr.startsWith(`Error: ${message}`), r.stderr);
    assert.ok(r.stderr.endsWith('\n\n'), JSON.stringify(r.stderr));
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
  }
});

test('a request for a signal this node lacks says why, in the session error form', {
  skip: admin,
}, async () => {
  const vm = join(FIXTURES, 'vm-1s4c');
  const r = await runCli(['session'], {
    input: 'TIME board 0\nCPU_ENERGY package 0\n',
    env: { JOULEGATE_SYSROOT: vm },
  });
  assert.equal(r.code, 255, r.stderr);
  assert.equal(
    r.stderr,
    `Error: CPU_ENERGY: not available: POWERCAP: no RAPL zones under ${vm}/sys/class/powercap; ` +
      'MSR: no /dev/cpu/0/msr (load the msr or msr-safe kernel module)\n\n',
  );
  assert.equal(r.stdout, '', 'nothing sampled before every request is known');
});

test('bad option values are argparse-style usage errors with exit 2', async () => {
  for (const [args, text] of [
    [['-t', 'abc'], "argument -t/--time: invalid float value: 'abc'"],
    [['-p', '1s'], "argument -p/--period: invalid float value: '1s'"],
    [['--pid', 'x'], "argument --pid: invalid int value: 'x'"],
    [['-s', '1.5'], "argument -s/--report-samples: invalid int value: '1.5'"],
  ] as [string[], string][]) {
    const r = await session(args, 'TIME board 0\n');
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr, `joulegate session: error: ${text}\n`);
  }
  const unknown = await session(['--bogus'], 'TIME board 0\n');
  assert.equal(unknown.code, 2);
});

test('trace to a file and a YAML report to stdout', async () => {
  const dir = tempDir();
  const tracePath = join(dir, 'trace.csv');
  const r = await session(['-t', '0.3', '-p', '0.1', '-o', tracePath, '-r', '-'], 'TIME board 0\n');
  assert.equal(r.code, 0, r.stderr);
  const trace = lines(readFileSync(tracePath, 'utf8'));
  assert.equal(trace.length, 5);
  const times = trace.slice(1).map(Number);
  const report = r.stdout;
  assert.match(report, /^host: ".+"\nsample-time-first: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}[+-]\d{4}"\n/);
  assert.match(report, /\nsample-count: 4\n/);
  assert.match(
    report,
    /\nmetrics:\n {2}TIME:\n {4}count: 4\n {4}first: \S+\n {4}last: \S+\n {4}min: \S+\n {4}max: \S+\n {4}mean: \S+\n {4}std: \S+\n$/,
  );
  const stat = (key: string) => Number(new RegExp(`\\n {4}${key}: (\\S+)`).exec(report)![1]);
  // %g keeps 6 significant digits
  assert.ok(Math.abs(stat('first') - times[0]!) <= 1e-5 * times[0]! + 1e-9);
  assert.ok(Math.abs(stat('max') - times[3]!) <= 1e-5 * times[3]!);
  const mean = times.reduce((a, b) => a + b, 0) / 4;
  assert.ok(Math.abs(stat('mean') - mean) <= 1e-5 * mean);
});

test('CSV report to a file, trace off with /dev/null; -s writes one report row per N periods', async () => {
  const dir = tempDir();
  const reportPath = join(dir, 'report.csv');
  const r = await session(
    ['-t', '0.5', '-p', '0.1', '-o', '/dev/null', '-r', reportPath, '-f', 'csv', '-s', '2'],
    'TIME board 0\nTIME board 0\n',
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '');
  const rows = lines(readFileSync(reportPath, 'utf8'));
  // 6 samples (idx 0..5): reports after idx 2 (3 samples) and 4 (2 samples), the rest (1) at the end
  assert.equal(rows.length, 4);
  assert.match(rows[0]!, /^"host","sample-time-first","sample-time-total","sample-count",/);
  assert.ok(rows[0]!.endsWith('"TIME-std"'));
  const countCol = rows[0]!.split(',').indexOf('"sample-count"');
  assert.deepEqual(
    rows.slice(1).map((row) => row.split(',')[countCol]),
    ['3', '2', '1'],
  );
});

function waitFor(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (check()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(poll, 20);
    };
    poll();
  });
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
}

for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  test(`${sig} mid-session: trace complete, report written, exit 0`, { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const tracePath = join(dir, 'trace.csv');
    const reportPath = join(dir, 'report.yaml');
    const child = spawn(
      process.execPath,
      [CLI, 'session', '-t', '600', '-p', '0.05', '-o', tracePath, '-r', reportPath],
      {
        stdio: ['pipe', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    // stdin stays open: the empty line alone must end the requests
    child.stdin!.write('TIME board 0\n\n');
    const done = exited(child);
    await waitFor(
      () => existsSync(tracePath) && lines(readFileSync(tracePath, 'utf8')).length >= 4,
      'trace rows',
    );
    child.kill(sig);
    const { code, signal } = await done;
    child.stdin!.destroy();
    assert.deepEqual([code, signal], [0, null], stderr);
    const trace = readFileSync(tracePath, 'utf8');
    assert.ok(trace.endsWith('\n'));
    const rows = lines(trace).slice(1);
    for (const row of rows) assert.match(row, /^\d+(\.\d+)?(e-\d+)?$/);
    const report = readFileSync(reportPath, 'utf8');
    assert.match(report, new RegExp(`\\nsample-count: ${rows.length}\\n`));
    assert.match(report, new RegExp(`\\n {4}count: ${rows.length}\\n`));
  });
}

test('--pid: with no time limit, sampling runs until that process is gone', { timeout: 60_000 }, async () => {
  const watched = spawn('sleep', ['600'], { stdio: 'ignore' });
  const watchedGone = exited(watched);
  const child = spawn(process.execPath, [CLI, 'session', '--pid', String(watched.pid), '-p', '0.05'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout!.on('data', (d) => {
    stdout += d;
  });
  const done = exited(child);
  child.stdin!.end('TIME board 0\n');
  await waitFor(() => lines(stdout).length >= 4, 'rows while the watched process lives');
  watched.kill('SIGKILL');
  await watchedGone; // reaped: kill(pid, 0) now fails with ESRCH
  const { code } = await done;
  assert.equal(code, 0);
  assert.ok(lines(stdout).length >= 4, stdout);

  const shortLived = spawn('true', [], { stdio: 'ignore' });
  await exited(shortLived);
  const dead = await session(['--pid', String(shortLived.pid), '-t', '30', '-p', '0.1'], 'TIME board 0\n');
  assert.equal(dead.code, 0, dead.stderr);
  assert.equal(lines(dead.stdout).length, 2, 'one sample, then the pid check ends it');
});

test('--pid of a process the caller may not signal (EPERM) counts as alive', {
  skip: asTestUsers,
}, async () => {
  const user = ensureUser('jg-cli-session');
  const r = await run(process.execPath, [CLI, 'session', '--pid', '1', '-t', '0.3', '-p', '0.1'], {
    prefix: asUser(user),
    input: 'TIME board 0\n',
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(lines(r.stdout).length, 5, r.stdout);
});

test('a reader that goes away (| head) ends the session quietly with status 0', { skip: admin }, async () => {
  const script = `printf 'TIME board 0\\n' | "${process.execPath}" "${CLI}" session -t 30 -p 0.05 -r - | head -2; echo "status=\${PIPESTATUS[1]}" >&2`;
  const r = await run('bash', ['-c', script], { timeoutMs: 60_000 });
  assert.equal(lines(r.stdout).length, 2);
  assert.equal(r.stderr, 'status=0\n');
});
