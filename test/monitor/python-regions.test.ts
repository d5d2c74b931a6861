import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pairRegionEvents } from '../../src/monitor/model/regions-pairing.js';
import type { Report } from '../../src/monitor/model/report-model.js';
import { run } from '../helpers/cli.js';
import { monitorPythonScript } from '../helpers/python-monitor.js';
import { needsTool } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const skip = needsTool('python3');

/** Debian's interpreter, as CI has it; `python3` resolves to it first on the monitor's PATH. */
const PYTHON = '/usr/bin/python3';
const CLIENT = new URL('../../python', import.meta.url).pathname;
const ROOT = copyFixture('vm-1s4c');
const env = { JOULEGATE_SYSROOT: ROOT, PATH: `/usr/bin:${process.env.PATH}` };

type Call = Report['rounds'][number]['metrics']['regions'][number];

/** `monitor --data_out X -f json SCRIPT` of a Python script: its report and what it printed. */
const monitorScript = (source: string, extraEnv: Record<string, string> = {}) =>
  monitorPythonScript(source, { ...env, ...extraEnv });

/**
 * The script's own record of its calls: lines `CALL name outer0 inner0 inner1 outer1` on stdout,
 * monotonic ns read just outside and just inside the region. The client stamps the region's
 * start between outer0 and inner0 and its stop between inner1 and outer1.
 */
interface OwnCall {
  name: string;
  inner0: bigint;
  /** Seconds between the inner readings: the least the region can have lasted. */
  least: number;
  /** Seconds between the outer readings: the most. */
  most: number;
}

function ownCalls(stdout: string): OwnCall[] {
  return [...stdout.matchAll(/^CALL (\S+) (\d+) (\d+) (\d+) (\d+)$/gm)].map((m) => {
    const [outer0, inner0, inner1, outer1] = m.slice(2, 6).map((x) => BigInt(x!)) as [
      bigint,
      bigint,
      bigint,
      bigint,
    ];
    return { name: m[1]!, inner0, least: Number(inner1 - inner0) / 1e9, most: Number(outer1 - outer0) / 1e9 };
  });
}

/** Stamps are whole µs on the channel: each end may be off by one. */
const STAMP_SLACK = 2e-6;

/**
 * A pairing of reported durations with distinct measured brackets, each duration inside its
 * bracket (indices into `brackets`, in the order of `durations`), or undefined when none exists.
 * Tried in the given orders first; backtracking finds any other.
 */
function bracketPairing(
  durations: number[],
  brackets: { least: number; most: number }[],
): number[] | undefined {
  const used = new Set<number>();
  const pairing: number[] = [];
  const fits = (d: number, b: { least: number; most: number }) =>
    d >= b.least - STAMP_SLACK && d <= b.most + STAMP_SLACK;
  const place = (i: number): boolean => {
    if (i === durations.length) return true;
    for (const [j, bracket] of brackets.entries()) {
      if (used.has(j) || !fits(durations[i]!, bracket)) continue;
      used.add(j);
      pairing.push(j);
      if (place(i + 1)) return true;
      used.delete(j);
      pairing.pop();
    }
    return false;
  };
  return place(0) ? pairing : undefined;
}

/**
 * Same calls in count per name, and each call's reported duration within what the script itself
 * measured around one call of that name, each measured call used once. That bracket is exact
 * whatever the machine does: when the script is not preempted it is well under 2 ms wide (so the
 * duration is within 2 ms of the script's), and when a loaded machine preempts it inside the
 * bracket, the bracket says how much the script's own figure can be off. Calls are not paired by
 * order: threads that start one region each stamp their starts in one order and may read their
 * own clocks in another (a thread preempted between the two), so which call is which is found
 * from the brackets. A stop paired with another call's start gives a duration no bracket holds.
 */
function assertMatch(calls: readonly Call[], own: OwnCall[]) {
  assert.equal(calls.length, own.length, JSON.stringify(calls.map((c) => c.name)));
  for (const name of new Set(own.map((c) => c.name))) {
    const reported = calls.filter((c) => c.name === name).sort((a, b) => a.start - b.start);
    const measured = own.filter((c) => c.name === name).sort((a, b) => (a.inner0 < b.inner0 ? -1 : 1));
    assert.equal(reported.length, measured.length, `${name} calls`);
    const durations = reported.map((c) => c.runtime);
    assert.ok(
      bracketPairing(durations, measured) !== undefined,
      `${name}: reported ${durations.join(', ')} s; no pairing puts each inside one of the script's brackets ${measured.map((m) => `${m.least}–${m.most}`).join(', ')} s`,
    );
  }
}

const PRELUDE = `import time, joulegate
def timed(name, seconds, inner=None):
    t0 = time.monotonic_ns()
    with joulegate.region(name):
        i0 = time.monotonic_ns()
        time.sleep(seconds)
        if inner: inner()
        i1 = time.monotonic_ns()
    print("CALL", name, t0, i0, i1, time.monotonic_ns(), flush=True)
`;

describe('Python regions client (python/joulegate) under joulegate monitor', { skip }, () => {
  it('monitor --data_out X -f json train.py: regions match the calls in count and (2 ms) duration', async () => {
    const { r, report, calls } = await monitorScript(`${PRELUDE}
assert joulegate.active()
inside = {}
@joulegate.monitor("step")
def step(k):
    inside["i0"] = time.monotonic_ns()
    time.sleep(0.01 * k)
    inside["i1"] = time.monotonic_ns()
for epoch in range(2):
    timed("epoch", 0.03, lambda: [step(1), step(2)])
    t0 = time.monotonic_ns(); step(3); t1 = time.monotonic_ns()
    print("CALL step", t0, inside["i0"], inside["i1"], t1, flush=True)
timed("outer", 0.02, lambda: timed("inner", 0.02, lambda: timed("inner", 0.01)))
`);
    // The decorator's calls inside epochs are counted from the report's own pairing: 2 per epoch.
    const own = ownCalls(r.stdout);
    const insideEpochs = calls.filter((c) => c.name === 'step' && c.depth === 1);
    assert.equal(insideEpochs.length, 4);
    assertMatch(
      calls.filter((c) => !(c.name === 'step' && c.depth === 1)),
      own,
    );
    assert.deepEqual(report.regions.map((s) => [s.name, s.callsPerRound]).sort(), [
      ['epoch', 2],
      ['inner', 2],
      ['outer', 1],
      ['step', 6],
    ]);
    const inner = calls.filter((c) => c.name === 'inner');
    assert.deepEqual(
      inner.map((c) => c.depth),
      [1, 2],
      'recursion pairs per name',
    );
    const runtime = report.rounds[0]!.metrics.host.runtime;
    for (const c of calls) assert.ok(c.start >= 0 && c.stop <= runtime && !c.open, JSON.stringify(c));
  });

  it('pairs each stop with its own start when threads interleave calls of one name', async () => {
    // Thread k starts 10·k ms in and runs 40 + 40·k ms: calls end in start order, so pairing by
    // a per-name stack would give 10, 70, 130, 190 ms instead of 40, 80, 120, 160 ms, outside the
    // brackets. A thread that waits for the GIL between its clock reads widens its own bracket.
    const { r, calls } = await monitorScript(`${PRELUDE}
import threading
shared = joulegate.region("shared")
def use_shared(seconds):
    t0 = time.monotonic_ns()
    with shared:
        i0 = time.monotonic_ns()
        time.sleep(seconds)
        i1 = time.monotonic_ns()
    print("CALL shared", t0, i0, i1, time.monotonic_ns(), flush=True)
for target in (lambda s: timed("work", s), use_shared):
    threads = [threading.Thread(target=target, args=(0.04 + 0.04 * k,)) for k in range(4)]
    for t in threads: t.start(); time.sleep(0.01)
    for t in threads: t.join()
`);
    assertMatch(calls, ownCalls(r.stdout));
  });

  it('closes a region left open at exit at the end of the run, flagged open', async () => {
    const { r, report, calls } = await monitorScript(`${PRELUDE}
timed("done", 0.01)
joulegate.region("left").start()
time.sleep(0.05)
`);
    const left = calls.find((c) => c.name === 'left')!;
    assert.ok(left.open);
    assert.equal(left.stop, report.rounds[0]!.metrics.host.runtime);
    assert.ok(left.runtime >= 0.05);
    assert.ok(!calls.find((c) => c.name === 'done')!.open);
    assert.match(r.stderr, /region left: started at [\d.]+ s and never stopped/);
  });

  it("keeps the user's PYTHONPATH after the client's", async () => {
    const lib = tempDir();
    writeFileSync(join(lib, 'usermod.py'), 'VALUE = 42\n');
    const { r, calls } = await monitorScript(
      `import sys, usermod, joulegate
print("paths", [p for p in sys.path if p in (${JSON.stringify(CLIENT)}, ${JSON.stringify(lib)})], usermod.VALUE)
with joulegate.region("r"): pass
`,
      { PYTHONPATH: lib },
    );
    assert.match(r.stdout, new RegExp(`paths \\['${CLIENT}', '${lib}'\\] 42`));
    assert.equal(calls.length, 1);
  });

  it('does nothing outside the monitor, also with a stale JOULEGATE_REGION_FD', async () => {
    const dir = tempDir();
    const script = join(dir, 'plain.py');
    writeFileSync(
      script,
      `import joulegate
@joulegate.monitor
def f(): return 7
with joulegate.region("x"):
    print(f(), joulegate.active(), f.__name__)
`,
    );
    for (const fd of [undefined, '1', '3', 'junk']) {
      const r = await run(PYTHON, [script], { env: { PYTHONPATH: CLIENT, JOULEGATE_REGION_FD: fd } });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, '7 False f\n', `JOULEGATE_REGION_FD=${fd}`);
    }
    const bad = await run(PYTHON, ['-c', 'import joulegate; joulegate.region("")'], {
      env: { PYTHONPATH: CLIENT },
    });
    assert.match(bad.stderr, /TypeError: region name must be a non-empty string/);
  });
});

describe('region call ids', { skip }, () => {
  it('pair a stop with its own start; events without ids keep the per-name stack', () => {
    const { calls, problems } = pairRegionEvents(
      [
        { name: 'w', kind: 'start', t: 0, call: 'a' },
        { name: 'w', kind: 'start', t: 1, call: 'b' },
        { name: 'w', kind: 'stop', t: 2, call: 'a' },
        { name: 'w', kind: 'stop', t: 3, call: 'b' },
        { name: 'v', kind: 'start', t: 4 },
        { name: 'v', kind: 'start', t: 5 },
        { name: 'v', kind: 'stop', t: 6 },
        { name: 'v', kind: 'stop', t: 7 },
        { name: 'w', kind: 'stop', t: 8, call: 'zz' },
      ],
      9,
    );
    assert.deepEqual(
      calls.map((c) => [c.name, c.start, c.stop]),
      [
        ['w', 0, 2],
        ['w', 1, 3],
        ['v', 4, 7],
        ['v', 5, 6],
      ],
    );
    assert.deepEqual(problems, ['region w: stop at 8.000 s without a start']);
  });
});
