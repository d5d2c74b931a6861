import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { CLI, run } from '../helpers/cli.js';
import { needsTool } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';

const skip = needsTool('python3');

const PYTHON = '/usr/bin/python3';
const PTY_RUN = new URL('../helpers/pty-run.py', import.meta.url).pathname;

interface PtyResult {
  status: number;
  output: string;
  timeout: boolean;
}

/**
 * `joulegate monitor … -- python3 <app>` on a real pseudo-terminal (it is the terminal's
 * foreground process group, as under a shell); each step waits for output, then types Ctrl-C.
 */
async function monitorOnPty(out: string, app: string, waits: string[]): Promise<PtyResult> {
  const argv = [process.execPath, CLI, 'monitor', '--format', 'json', '--data-out', out, '--', PYTHON, app];
  const spec = { argv, steps: waits.map((wait) => ({ wait, send: '\u0003' })), timeout: 30 };
  const r = await run(PYTHON, [PTY_RUN, JSON.stringify(spec)], { cwd: out, timeoutMs: 40_000 });
  assert.equal(r.code, 0, r.stderr);
  const result = JSON.parse(r.stdout) as PtyResult;
  assert.equal(result.timeout, false, result.output);
  return result;
}

function onlyReport(out: string): Report {
  const files = readdirSync(out).filter((f) => f.endsWith('.json'));
  assert.equal(files.length, 1, files.join(' '));
  return JSON.parse(readFileSync(join(out, files[0]!), 'utf8'), (_k, v) => (v === null ? Number.NaN : v));
}

/**
 * A Python app with `except KeyboardInterrupt:` cleanup that counts the SIGINTs it gets.
 * It waits in short sleeps, not one long one: CPython runs a Python signal handler between
 * bytecodes, and a SIGINT that lands after its last check but before `time.sleep` enters the
 * kernel is only acted on when that sleep ends. The Ctrl-C typed the moment "APP READY" shows
 * hits that window now and then (4 of 150 runs of python3 alone on a pty, no monitor involved);
 * with 50 ms sleeps the handler runs within 50 ms of the signal.
 */
const COUNTING_APP = `import signal, time
count = 0
def on_int(sig, frame):
    global count
    count += 1
    if count == 1:
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, on_int)
try:
    print("APP READY", flush=True)
    for _ in range(600):
        time.sleep(0.05)
except KeyboardInterrupt:
    time.sleep(1.0)  # cleanup: a second SIGINT now would arrive here and be counted
    print(f"APP CLEANED UP after {count} SIGINT", flush=True)
`;

describe('Ctrl-C on a real terminal', { skip }, () => {
  it('the app gets exactly one SIGINT, finishes its cleanup; exit 130, report interrupted', async () => {
    const out = tempDir();
    const app = join(out, 'app.py');
    writeFileSync(app, COUNTING_APP);
    const r = await monitorOnPty(out, app, ['APP READY']);
    assert.match(r.output, /APP CLEANED UP after 1 SIGINT/);
    assert.match(r.output, /joulegate: SIGINT: the app got it from the terminal; waiting for it to exit/);
    assert.equal(r.status, 130, r.output);
    const report = onlyReport(out);
    assert.equal(report.failure, 'interrupted by SIGINT');
  });

  it('an app ignoring SIGINT gets SIGTERM at the second Ctrl-C, SIGKILL at the third', async () => {
    const out = tempDir();
    const ignoresInt = join(out, 'ignores-int.py');
    writeFileSync(
      ignoresInt,
      'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint("APP READY", flush=True)\ntime.sleep(30)\n',
    );
    const term = await monitorOnPty(out, ignoresInt, ['APP READY', 'interrupt again to send SIGTERM']);
    assert.match(
      term.output,
      /joulegate: second interrupt: sent SIGTERM to the app \(interrupt again to send SIGKILL\)/,
    );
    assert.equal(term.status, 143, term.output);
    assert.equal(onlyReport(out).failure, 'interrupted by SIGINT');

    const out2 = tempDir();
    const ignoresBoth = join(out2, 'ignores-both.py');
    writeFileSync(
      ignoresBoth,
      'import signal, time\nfor s in (signal.SIGINT, signal.SIGTERM):\n    signal.signal(s, signal.SIG_IGN)\n' +
        'print("APP READY", flush=True)\ntime.sleep(30)\n',
    );
    const kill = await monitorOnPty(out2, ignoresBoth, [
      'APP READY',
      'interrupt again to send SIGTERM',
      'interrupt again to send SIGKILL',
    ]);
    assert.match(kill.output, /joulegate: third interrupt: sent SIGKILL to the app/);
    assert.equal(kill.status, 137, kill.output);
    assert.equal(onlyReport(out2).failed, true);
  });
});

describe('SIGINT sent to the monitor alone', { skip }, () => {
  it('is passed on once; an app that handles it and exits 0 still ends with 130', async () => {
    const out = tempDir();
    const app = join(out, 'app.py');
    writeFileSync(app, COUNTING_APP);
    // A session of its own, without a terminal (as under a batch system), whatever runs the
    // tests: only the signal sent to the monitor's pid (kill -INT) can reach the app.
    const child = spawn(
      process.execPath,
      [CLI, 'monitor', '--format', 'json', '--data-out', out, '--', PYTHON, app],
      {
        cwd: out,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      if (stdout.includes('APP READY') && !child.killed) child.kill('SIGINT');
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.match(stdout, /APP CLEANED UP after 1 SIGINT/);
    assert.match(stderr, /joulegate: SIGINT: passed SIGINT on to the app; waiting for it to exit/);
    assert.equal(code, 130, stderr);
    assert.equal(onlyReport(out).failure, 'interrupted by SIGINT');
  });
});
