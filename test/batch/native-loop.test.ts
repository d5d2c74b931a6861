import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseProcessStat } from '../../src/attribution/proc-stat.js';
import { loadNativeLoop, NATIVE_LOOP_ENV, nativeLoopPath } from '../../src/batch/native-loop.js';
import { type BatchRequest, bufferPath } from '../../src/ipc/batch/protocol.js';
import { allowedCpus } from '../../src/platform/cpu-affinity.js';
import { DomainType } from '../../src/platform/domains.js';
import { libc } from '../../src/platform/libc.js';
import { BatchServerLauncher } from '../../src/service/batch-launcher.js';
import { CPUFREQ_KHZ, generateTree } from '../fixtures/generate.js';
import { captureSysroot } from '../helpers/captures.js';
import { needsDaemon } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { ensureUser } from '../helpers/users.js';
import { batchRunDir, ClientDriver, startServerFor } from './driver.js';

// The batch server's native sampling loop (src/batch/native-loop.c) against real server
// processes and a client of another uid: the values it stores are those the JavaScript loop
// stores for the same files, reads it cannot be sure of go to JavaScript one at a time, and the
// messages it does not answer reach the JavaScript server as before.

const skip = needsDaemon();

// Two CPUs, one cpufreq policy each; the servers read this tree (they inherit the environment).
const tree = tempDir('joulegate-native-loop-tree-');
generateTree(tree, { packages: 1, coresPerPackage: 2, threadsPerCore: 1 });
process.env.JOULEGATE_SYSROOT = tree;
delete process.env[NATIVE_LOOP_ENV];

const curFreq = (cpu: number) => join(tree, `sys/devices/system/cpu/cpufreq/policy${cpu}/scaling_cur_freq`);
const TIME = { name: 'TIME', domain: DomainType.Board, idx: 0 };
const SIGNALS = [
  TIME,
  { name: 'CPUFREQ::SCALING_CUR_FREQ', domain: DomainType.Cpu, idx: 0 },
  // average over both CPUs' files: two reads combined in C
  { name: 'CPU_FREQUENCY_STATUS', domain: DomainType.Package, idx: 0 },
  // a constant, read once at setup
  { name: 'CPUFREQ::CPUINFO_MAX_FREQ', domain: DomainType.Cpu, idx: 1 },
  TIME, // a second slot of the same signal
];

const logs: string[] = [];
// No spares: each server is spawned at its start, with the environment of that moment.
const launcher = new BatchServerLauncher({
  log: (line) => logs.push(line),
  spares: 0,
  startTimeoutMs: 180_000,
});

type Values = (number | null)[];

/** A client of another uid, connected to a server for `signals` and `controls`; `native` false: JOULEGATE_BATCH_NATIVE_LOOP=0. */
async function started(signals: BatchRequest[], controls: BatchRequest[], native = true) {
  if (native) delete process.env[NATIVE_LOOP_ENV];
  else process.env[NATIVE_LOOP_ENV] = '0';
  const user = ensureUser('jg-batch-alice');
  const client = await ClientDriver.start(user);
  const dir = batchRunDir();
  const server = await startServerFor(launcher, dir, client, user, signals, controls);
  const connect = `connect ${dir} ${server.serverKey} ${signals.length} ${controls.length}`;
  assert.deepEqual(await client.send(connect), { ok: true });
  return { client, server, dir };
}

/** Runs `steps` (file contents of cpu0 and cpu1 before each read) through one server; its reads and log line. */
async function session(native: boolean, steps: [string, string][], signals = SIGNALS) {
  const { client, server } = await started(signals, [], native);
  const reads: Values[] = [];
  for (const [cpu0, cpu1] of steps) {
    writeFileSync(curFreq(0), cpu0);
    writeFileSync(curFreq(1), cpu1);
    reads.push((await client.send('read')).values!);
  }
  assert.deepEqual(await client.send('quit'), { ok: true });
  await server.exited;
  const prefix = `joulegated: batch server ${server.serverPid} of client ${client.pid} released (quit; `;
  const line = logs.find((l) => l.startsWith(prefix));
  assert.ok(line, `no release line for server ${server.serverPid}:\n${logs.join('\n')}`);
  return { reads, sampling: line.slice(prefix.length, -1) };
}

const STEPS: [string, string][] = [
  ['1200000\n', '2000000\n'], // the first message: answered in JavaScript, which removes the files
  ['1300000\n', ' 2100000 \n'], // plain integers: C
  ['2400000.5\n', '1000000\n'], // not an integer: JavaScript parses it
  ['garbage\n', '1000000\n'], // not a number: JavaScript reports it, NaN
  ['1500000', '1600000'], // C again
];
const MAX_HZ = CPUFREQ_KHZ.max * 1000;
/** What each read must hold in Hz, TIME left out (slots 1..3). */
const EXPECTED: Values[] = [
  [1_200_000_000, 1_600_000_000, MAX_HZ],
  [1_300_000_000, 1_700_000_000, MAX_HZ],
  [2_400_000_500, 1_700_000_250, MAX_HZ],
  [null, 1_000_000_000, MAX_HZ], // the average leaves out the missing value
  [1_500_000_000, 1_550_000_000, MAX_HZ],
];

describe('batch server: the native sampling loop', { skip }, () => {
  test('the build made the library', () => {
    const path = nativeLoopPath();
    assert.ok(path && existsSync(path), `${path} is missing: run npm run build (it needs cc)`);
  });

  test('refuses a plan whose indices leave its arrays before it reads anything; a bad FIFO gives its errno', () => {
    const serve = loadNativeLoop({});
    assert.equal(typeof serve, 'function', String(serve));
    if (typeof serve !== 'function') return;
    const signal = Buffer.alloc(16);
    signal.writeInt32LE(0, 0); // first read
    signal.writeInt32LE(1, 4); // one read
    const args = (slot: number, first: number) => {
      signal.writeInt32LE(first, 0);
      const served = new BigUint64Array(1);
      // in_fd -1: were the plan taken, the first read(2) would fail with EBADF
      return serve(
        -1,
        -1,
        null,
        1,
        Int32Array.of(slot),
        signal,
        1,
        Buffer.alloc(24),
        1,
        new Float64Array(1),
        served,
        -1,
        0,
      );
    };
    assert.equal(args(1, 0), -3, 'a slot naming a signal that is not there');
    assert.equal(args(-1, 0), -3);
    assert.equal(args(0, 1), -3, "a signal whose reads run past the plan's");
    assert.equal(args(0, 0), -1000 - 9, 'read(2) on fd -1: EBADF');
  });

  test("the server moves next to its client's main thread at the first request", {
    skip: allowedCpus().length < 2 && 'one CPU',
  }, async () => {
    const lastCpu = (pid: number) =>
      parseProcessStat(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8')).processor;
    const preemptions = (pid: number) =>
      Number(
        /^nonvoluntary_ctxt_switches:\s*(\d+)/m.exec(
          readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'),
        )![1],
      );
    // A server that was preempted between its move and its sleep (a loaded machine) may have been
    // moved back by the kernel's balancing: such a try shows nothing, and another is made. A try
    // without preemption shows where the server put itself: a sleeping task keeps its CPU.
    const shown: string[] = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      const { client, server } = await started([TIME], []);
      try {
        // The client's main thread is held on a CPU other than the one the server waits on.
        const clientCpu = allowedCpus().find((cpu) => cpu !== lastCpu(server.serverPid))!;
        const taskset = spawnSync('taskset', ['-p', '-c', String(clientCpu), String(client.pid)], {
          env: { PATH: '/usr/bin:/bin' },
        });
        assert.equal(taskset.status, 0, String(taskset.stderr));
        const preemptedBefore = preemptions(server.serverPid);
        assert.equal((await client.send('read')).values!.length, 1);
        // Answered, it waits for the next request where it answered: beside the client.
        const serverCpu = lastCpu(server.serverPid);
        if (serverCpu === clientCpu) return;
        assert.notEqual(
          preemptions(server.serverPid),
          preemptedBefore,
          `the server sleeps on CPU ${serverCpu}, its client runs on CPU ${clientCpu}, and nothing preempted the server`,
        );
        shown.push(`CPU ${serverCpu} after a preemption`);
      } finally {
        assert.deepEqual(await client.send('quit'), { ok: true });
        await server.exited;
      }
    }
    assert.fail(`every try was preempted before it slept: ${shown.join('; ')}`);
  });

  test("looks at its client's CPU every so many answers, and comes back when the client is elsewhere", () => {
    const serve = loadNativeLoop({});
    assert.equal(typeof serve, 'function', String(serve));
    if (typeof serve !== 'function') return;
    const dir = tempDir('joulegate-native-looks-');
    const [requests, answers] = ['in', 'out'].map((name) => {
      const path = join(dir, name);
      assert.equal(libc().mkfifo(path, 0o600), 0);
      return openSync(path, 'r+'); // read and write ends in one: no wait for a peer
    }) as [number, number];
    // A stat line of a client on CPU `cpu`, with the odd name the kernel allows.
    const statOn = (cpu: number | string) => {
      const path = join(dir, `stat-${cpu}`);
      const fields = Array.from({ length: 50 }, (_, i) => (i === 36 ? String(cpu) : String(i + 3)));
      writeFileSync(path, `4242 (a) b (c) ${fields.join(' ')}\n`);
      return openSync(path, 'r');
    };
    const opened: number[] = [requests, answers];
    try {
      const signal = Buffer.alloc(16);
      signal.writeInt32LE(1, 4); // one read: reads[0], the clock
      const buffer = Buffer.alloc(64 + 8);
      const served = new BigUint64Array(1);
      const call = (stat: number, every: number) =>
        serve(
          requests,
          answers,
          buffer,
          1,
          Int32Array.of(0),
          signal,
          1,
          Buffer.alloc(24),
          1,
          new Float64Array(1),
          served,
          stat,
          every,
        );
      // No CPU has this number: every look finds the client elsewhere.
      const away = statOn(1 << 19);
      opened.push(away);
      writeSync(requests, Buffer.from('rrrrrq'));
      assert.equal(call(away, 2), -4, 'two answered, then a look: elsewhere');
      assert.equal(served[0], 2n);
      assert.equal(call(away, 2), -4);
      assert.equal(
        call(away, 2),
        'q'.charCodeAt(0),
        'one more answered, then the message it does not answer',
      );
      assert.equal(served[0], 5n);
      // No looks without a stat file or an interval, nor where the line is not a stat line.
      const garbage = statOn('x');
      opened.push(garbage);
      writeSync(requests, Buffer.from('rrrrq'));
      assert.equal(call(-1, 1), 'q'.charCodeAt(0));
      writeSync(requests, Buffer.from('rrrrq'));
      assert.equal(call(away, 0), 'q'.charCodeAt(0));
      writeSync(requests, Buffer.from('rrrrq'));
      assert.equal(call(garbage, 1), 'q'.charCodeAt(0), 'an unreadable line ends the looks');
      assert.equal(served[0], 17n);
      const got = Buffer.alloc(32);
      assert.equal(readSync(answers, got), 17);
      assert.equal(got.toString('latin1', 0, 17), 'c'.repeat(17));
      assert.ok(buffer.readDoubleLE(64) > 0, 'the clock was stored');
    } finally {
      for (const fd of opened) closeSync(fd);
    }
  });

  test('stores the values the JavaScript loop stores, and hands JavaScript the reads it cannot be sure of', async () => {
    const native = await session(true, STEPS);
    const javascript = await session(false, STEPS);
    assert.equal(native.sampling, '2 reads in the native loop, 3 in JavaScript');
    assert.equal(javascript.sampling, `5 reads in JavaScript (${NATIVE_LOOP_ENV}=0)`);
    for (const run of [native, javascript]) {
      assert.deepEqual(
        run.reads.map((r) => r.slice(1, 4)),
        EXPECTED,
      );
      const times = run.reads.map((r) => r[0]!);
      for (let i = 1; i < times.length; i++) assert.ok(times[i]! > times[i - 1]!, `TIME advances: ${times}`);
      for (const r of run.reads) assert.equal(r[4], r[0], 'two slots of one signal hold one read');
    }
  });

  test('file contents of every odd kind give the same values in both loops', async () => {
    const odd = [
      '',
      '\n',
      '0',
      '-0',
      '-17\n',
      '+5',
      '0x10',
      '1e3',
      '7 8',
      ' \t42\r\n',
      '\u000042',
      '42\u0000',
      '123456789012345',
      '1234567890123456',
      '0000000000000001',
      '9'.repeat(63),
      '1'.padStart(64, ' '),
      'nan',
      '12abc',
      '--3',
    ];
    const steps = odd.map((text): [string, string] => [text, '1000000\n']);
    // First a plain read: the first message is answered in JavaScript whichever the loop.
    steps.unshift(['1000000\n', '1000000\n']);
    const one = [TIME, { name: 'CPUFREQ::SCALING_CUR_FREQ', domain: DomainType.Cpu, idx: 0 }];
    const native = await session(true, steps, one);
    const javascript = await session(false, steps, one);
    assert.deepEqual(
      native.reads.map((r) => r[1]),
      javascript.reads.map((r) => r[1]),
    );
    assert.match(native.sampling, /^[1-9]\d* reads in the native loop/, 'C answered some of them');
  });

  test("over node_exporter's real sysfs capture (the old cpu*/cpufreq layout) both loops store the same values", async () => {
    const signals = [
      TIME,
      { name: 'CPUFREQ::SCALING_CUR_FREQ', domain: DomainType.Board, idx: 0 },
      { name: 'CPUFREQ::SCALING_MIN_FREQ', domain: DomainType.Cpu, idx: 0 },
      { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: DomainType.Board, idx: 0 },
    ];
    const runs = [];
    process.env.JOULEGATE_SYSROOT = captureSysroot('node_exporter');
    try {
      for (const native of [true, false]) {
        const { client, server } = await started(signals, [], native);
        const reads: Values[] = [];
        for (let i = 0; i < 3; i++) reads.push((await client.send('read')).values!);
        assert.deepEqual(await client.send('quit'), { ok: true });
        await server.exited;
        const line = logs.find((l) =>
          l.includes(`batch server ${server.serverPid} of client ${client.pid} released`),
        );
        runs.push({ reads, line });
      }
    } finally {
      process.env.JOULEGATE_SYSROOT = tree;
    }
    const [native, javascript] = runs;
    assert.match(String(native!.line), /2 reads in the native loop, 1 in JavaScript/);
    assert.match(String(javascript!.line), /3 reads in JavaScript/);
    const cpufreq = (r: Values[]) => r.map((v) => v.slice(1));
    assert.deepEqual(cpufreq(native!.reads), cpufreq(javascript!.reads));
    for (const v of native!.reads.flatMap((r) => r.slice(1)))
      assert.ok(v !== null && v > 0, `a frequency: ${v}`);
  });

  test('a signal without a native read keeps the whole batch in JavaScript, and the log names it', async () => {
    const withRate = [TIME, { name: 'CPU_UTILIZATION', domain: DomainType.Board, idx: 0 }];
    const run = await session(true, STEPS.slice(0, 3), withRate);
    assert.equal(run.sampling, '3 reads in JavaScript (CPU_UTILIZATION has no native read)');
  });

  test('a batch larger than the loop copies onto its stack (70 slots) is served from the caller arrays', async () => {
    const slots = Array.from({ length: 70 }, () => TIME);
    const run = await session(true, STEPS.slice(0, 3), slots);
    assert.equal(run.sampling, '2 reads in the native loop, 1 in JavaScript');
    for (const r of run.reads) assert.deepEqual(new Set(r).size, 1, 'every slot holds the one TIME read');
    assert.ok(run.reads[2]![0]! > run.reads[1]![0]!);
  });

  test('a control write between reads is answered in JavaScript, and C reads on after it', async () => {
    const maxFreq = { name: 'CPUFREQ::SCALING_MAX_FREQ', domain: DomainType.Cpu, idx: 0 };
    const { client, server } = await started([TIME, maxFreq], [maxFreq]);
    const maxHz = async () => (await client.send('read')).values![1];
    assert.equal(await maxHz(), MAX_HZ);
    assert.equal(await maxHz(), MAX_HZ);
    assert.deepEqual(await client.send('write 3000000000'), { ok: true });
    assert.equal(await maxHz(), 3_000_000_000, 'C reads the file the write changed');
    assert.equal(
      readFileSync(join(tree, 'sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq'), 'utf8'),
      '3000000\n',
    );
    assert.deepEqual(await client.send('quit'), { ok: true });
    await server.exited;
    assert.ok(
      logs.includes(
        `joulegated: batch server ${server.serverPid} of client ${client.pid} released (quit; 2 reads in the native loop, 1 in JavaScript)`,
      ),
      logs.join('\n'),
    );
  });

  test('a client that truncates its buffer while C serves it kills the server (SIGBUS), and only it', async () => {
    const { client, server, dir } = await started([TIME], []);
    // Held open before the first read, after which the server unlinks the file.
    assert.deepEqual(await client.send(`hold ${bufferPath(dir, server.serverKey, 'signal')}`), { ok: true });
    await client.send('read');
    await client.send('read');
    assert.deepEqual(await client.send('shrink'), { ok: true });
    const read = client.send('read');
    await server.exited;
    assert.ok(
      logs.includes(
        `joulegated: batch server ${server.serverPid} of client ${client.pid} ended: killed by SIGBUS`,
      ),
      logs.join('\n'),
    );
    assert.match(String((await read).error), /./, 'the client learns that its server is gone');
    await client.kill();
  });

  test('a client that goes away while C waits for its message releases the server', async () => {
    const { client, server } = await started([TIME], []);
    await client.send('read');
    await client.send('read');
    await client.kill();
    await server.exited;
    assert.ok(
      logs.includes(
        `joulegated: batch server ${server.serverPid} of client ${client.pid} released (client closed; 1 read in the native loop, 1 in JavaScript)`,
      ),
      logs.join('\n'),
    );
  });
});
