import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { run } from '../helpers/cli.js';
import { monitorPythonScript } from '../helpers/python-monitor.js';
import { needsTool } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const skip = needsTool('python3');

const PYTHON = '/usr/bin/python3';
const ROOT = copyFixture('vm-1s4c');
const env = { JOULEGATE_SYSROOT: ROOT, PATH: `/usr/bin:${process.env.PATH}` };

/** A script as perun's users write it: perun's import and decorators, nothing of joulegate. */
const PERUN_SCRIPT = `import time
import perun

@perun.monitor()
def train(n):
    time.sleep(0.02 * n)
    return n

@perun.monitor(region_name="evaluate")
def check():
    time.sleep(0.01)

@perun.perun(app_name="whole", data_out="ignored")
def main():
    total = sum(train(k) for k in (1, 2, 3))
    check(); check()
    return total

print("result", main(), perun.__version__.split("+")[0])
perun.register_callback(lambda node: None)
`;

/**
 * A stand-in for an installed perun: importing it says so and would start its own monitoring,
 * which records none of the regions for joulegate.
 */
function fakeRealPerun(): string {
  const lib = tempDir();
  mkdirSync(join(lib, 'perun'));
  writeFileSync(
    join(lib, 'perun', '__init__.py'),
    `print("REAL PERUN IMPORTED", flush=True)
__version__ = "0.9.1"
def monitor(region_name=None):
    return lambda f: f
def perun(configuration_file="./.perun.ini", **kw):
    return lambda f: f
def register_callback(f): pass
`,
  );
  return lib;
}

const monitorPerunScript = (extraEnv: Record<string, string> = {}) =>
  monitorPythonScript(PERUN_SCRIPT, { ...env, ...extraEnv });

describe("perun's region API (python/perun) under joulegate monitor", { skip }, () => {
  it('records @perun.monitor() and @perun.monitor(region_name=…) regions without perun installed', async () => {
    const { r, report } = await monitorPerunScript();
    assert.match(r.stdout, /^result 6 0\.9\.1$/m);
    assert.doesNotMatch(r.stdout, /REAL PERUN/);
    assert.deepEqual(report.regions.map((s) => [s.name, s.callsPerRound]).sort(), [
      ['evaluate', 2],
      ['train', 3],
      ['whole', 1],
    ]);
    const calls = report.rounds[0]!.metrics.regions;
    const train = calls.filter((c) => c.name === 'train').sort((a, b) => a.start - b.start);
    // Each call slept 20·n ms: its region lasted at least that.
    for (const [i, c] of train.entries()) assert.ok(c.runtime >= 0.02 * (i + 1), JSON.stringify(c));
    assert.equal(calls.find((c) => c.name === 'train')!.depth, 1, 'inside the @perun.perun region');
    // One notice for @perun.perun, one for the callback; no stack trace.
    assert.match(r.stderr, /@perun\.perun under joulegate monitor: main is measured as a region/);
    assert.match(r.stderr, /perun\.register_callback\(<lambda>\) ignored/);
    assert.doesNotMatch(r.stderr, /Traceback/);
  });

  it('wins over an installed perun while monitoring; the installed one is untouched outside', async () => {
    const lib = fakeRealPerun();
    const { r, report } = await monitorPerunScript({ PYTHONPATH: lib });
    assert.doesNotMatch(r.stdout, /REAL PERUN/, 'the shim, not the installed perun');
    assert.equal(report.regions.find((s) => s.name === 'train')?.callsPerRound, 3);
    // Outside the monitor nothing of joulegate is on the path: `import perun` is perun's.
    const plain = await run(PYTHON, ['-c', 'import perun; print(perun.__version__)'], {
      env: { PYTHONPATH: lib },
    });
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stdout, 'REAL PERUN IMPORTED\n0.9.1\n');
  });
});
