import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseCpuacctUsage, parseCpuStatUsage } from '../../src/attribution/cgroup.js';
import { processTimeDelta, scalePlacement, spreadEvenly, timeOn } from '../../src/attribution/cpu-time.js';
import { kernelClockTicks } from '../../src/attribution/kernel-files.js';
import {
  clockTicksFromAuxv,
  parseChildren,
  parsePidList,
  parseProcessStat,
  processKey,
} from '../../src/attribution/proc-stat.js';
import { ParseError } from '../../src/platform/errors.js';
import { FIXTURES } from '../helpers/tmp.js';
import { proc, statLine } from './helpers.js';

const TICK_US = 10_000;

describe('per-process /proc parsers', () => {
  it('parseProcessStat: a command name with spaces and parentheses, times, start, processor', () => {
    const text = readFileSync(`${FIXTURES}attribution/node/proc/1011/stat`, 'utf8');
    assert.deepEqual(parseProcessStat(text), {
      pid: 1011,
      ppid: 1010,
      startTicks: 5010,
      ownTicks: 500,
      reapedTicks: 0,
      processor: 0,
    });
    const p = parseProcessStat(statLine(7, ') (x', [1, 99, 3, 4, 5, 6, 13]));
    assert.deepEqual(p, { pid: 7, ppid: 1, startTicks: 99, ownTicks: 7, reapedTicks: 11, processor: 13 });
  });

  it('parseProcessStat: this very process, read from the real /proc', () => {
    const p = parseProcessStat(readFileSync('/proc/self/stat', 'utf8'));
    assert.equal(p.pid, process.pid);
    assert.equal(p.ppid, process.ppid);
    assert.ok(p.processor >= 0);
  });

  it('parseProcessStat: short or garbled lines are ParseErrors naming the file', () => {
    assert.throws(
      () => parseProcessStat('12 (x) S 1 2 3', '/proc/12/stat'),
      (e: unknown) => {
        assert.ok(e instanceof ParseError);
        assert.match((e as Error).message, /^\/proc\/12\/stat: 6 fields, expected at least 39/);
        return true;
      },
    );
    assert.throws(() => parseProcessStat('12 x S 1', '/proc/12/stat'), /no "\(command\)" field/);
    const line = statLine(12, 'x', [1, 2, 3, 4, 5, 6, 7]).replace(' 3 4 5 6 ', ' 3 four 5 6 ');
    assert.throws(() => parseProcessStat(line, '/proc/12/stat'), /stime "four" is not an integer/);
  });

  it('parseChildren and parsePidList', () => {
    assert.deepEqual(parseChildren('501 502 \n'), [501, 502]);
    assert.deepEqual(parseChildren('\n'), []);
    assert.deepEqual(parsePidList('2021\n2022\n'), [2021, 2022]);
    assert.throws(() => parsePidList('12\nabc\n', 'x/cgroup.procs'), /x\/cgroup.procs: bad pid "abc"/);
  });

  it('clockTicksFromAuxv: finds AT_CLKTCK in 64- and 32-bit vectors of either byte order', () => {
    const vector64 = Buffer.alloc(64);
    vector64.writeBigUInt64LE(6n, 0); // AT_PAGESZ
    vector64.writeBigUInt64LE(4096n, 8);
    vector64.writeBigUInt64LE(17n, 16); // AT_CLKTCK
    vector64.writeBigUInt64LE(250n, 24);
    assert.equal(clockTicksFromAuxv(vector64, 8, true), 250);
    const vector32 = Buffer.alloc(24);
    vector32.writeUInt32BE(6, 0);
    vector32.writeUInt32BE(4096, 4);
    vector32.writeUInt32BE(17, 8);
    vector32.writeUInt32BE(1024, 12);
    assert.equal(clockTicksFromAuxv(vector32, 4, false), 1024);
    assert.equal(clockTicksFromAuxv(Buffer.alloc(32), 8, true), undefined); // AT_NULL first
  });

  it('kernelClockTicks equals getconf CLK_TCK on this machine', () => {
    const getconf = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    assert.equal(kernelClockTicks(), getconf);
  });

  it('cgroup counters: v2 usage_usec, v1 cpuacct.usage in ns', () => {
    assert.equal(parseCpuStatUsage('usage_usec 4150001\nuser_usec 4000000\nsystem_usec 150001\n'), 4150001);
    assert.throws(() => parseCpuStatUsage('user_usec 1\n', 'x/cpu.stat'), /x\/cpu.stat: no usage_usec line/);
    assert.equal(parseCpuacctUsage('2500000000\n'), 2_500_000);
    assert.throws(
      () => parseCpuacctUsage('-3\n', 'y/cpuacct.usage'),
      /y\/cpuacct.usage: expected a number of ns/,
    );
  });
});

describe('CPU time of a group of processes between two readings', () => {
  const total = (p: { perCpuUs: Float64Array; unplacedUs: number }) =>
    p.perCpuUs.reduce((a, b) => a + b, 0) + p.unplacedUs;

  it('growth of members seen twice, placed on the CPU they last ran on', () => {
    const before = [proc(10, 1, 100, 50, 0, 0), proc(11, 10, 101, 20, 0, 1)];
    const after = [proc(10, 1, 100, 80, 0, 2), proc(11, 10, 101, 25, 0, 1)];
    const d = processTimeDelta(before, after, 4, TICK_US);
    assert.deepEqual([...d.perCpuUs], [0, 50_000, 300_000, 0]);
  });

  it('a new member counts whole; a member that vanished adds nothing more (its last time was counted)', () => {
    const before = [proc(10, 1, 100, 50), proc(12, 1, 102, 70, 0, 3)];
    const after = [proc(10, 1, 100, 50), proc(13, 10, 200, 9, 0, 1)];
    const d = processTimeDelta(before, after, 4, TICK_US);
    assert.deepEqual([...d.perCpuUs], [0, 90_000, 0, 0]);
  });

  it('a reused pid (another start time) is a new process, not a counter that went backwards', () => {
    const before = [proc(10, 1, 100, 500, 0, 0)];
    const after = [proc(10, 1, 900, 7, 0, 2)];
    const d = processTimeDelta(before, after, 4, TICK_US);
    assert.deepEqual([...d.perCpuUs], [0, 0, 70_000, 0]);
    assert.notEqual(processKey(before[0]!), processKey(after[0]!));
  });

  it("a child reaped by a member: the parent adds only the tail after the child's last reading", () => {
    // child 11 had 30 own + 4 reaped at its last reading; it ran 6 more ticks and was waited for.
    const before = [proc(10, 1, 100, 50, 0, 0), proc(11, 10, 101, 30, 4, 3)];
    const after = [proc(10, 1, 100, 52, 40, 0)];
    const d = processTimeDelta(before, after, 4, TICK_US);
    assert.deepEqual([...d.perCpuUs], [(2 + 6) * TICK_US, 0, 0, 0]);
  });

  it('a child and its grandchild vanish together: both are netted out of the surviving ancestor', () => {
    // 12 (child of 11) was seen with 10 ticks; 11 was seen with 20; 11 reaped 12 (12 final: 12
    // ticks), then 10 reaped 11 (final own 21 + reaped 12). Tails: 12's 2 ticks + 11's 1 tick.
    const before = [proc(10, 1, 100, 5), proc(11, 10, 101, 20), proc(12, 11, 102, 10)];
    const after = [proc(10, 1, 100, 5, 33)];
    const d = processTimeDelta(before, after, 1, TICK_US);
    assert.equal(total(d), 3 * TICK_US);
  });

  it("short-lived children never seen: their whole time arrives through the parent's reaped time", () => {
    const before = [proc(10, 1, 100, 5)];
    const after = [proc(10, 1, 100, 5, 42, 1)];
    assert.equal(total(processTimeDelta(before, after, 2, TICK_US)), 42 * TICK_US);
  });

  it('a member reaped outside the group, or a tail estimate below zero, never places negative time', () => {
    const before = [proc(10, 1, 100, 5), proc(11, 10, 101, 50)];
    // 10 did not reap 11 (init did after re-parenting): its reaped time did not grow.
    const after = [proc(10, 1, 100, 9, 0, 1)];
    const d = processTimeDelta(before, after, 2, TICK_US);
    assert.deepEqual([...d.perCpuUs], [0, 0]);
  });

  it('time on a CPU the node does not have is kept as unplaced, not dropped', () => {
    const d = processTimeDelta([], [proc(10, 1, 100, 3, 0, 64)], 4, TICK_US);
    assert.equal(d.unplacedUs, 30_000);
    assert.equal(total(d), 30_000);
  });

  it('cgroup helpers: spread over a cpuset, scale process samples to the exact counter, sum on a device', () => {
    const spread = spreadEvenly(1_500_000, [0, 1], 4);
    assert.deepEqual([...spread.perCpuUs], [750_000, 750_000, 0, 0]);
    assert.equal(spreadEvenly(10, [], 2).unplacedUs, 10);
    const samples = { perCpuUs: Float64Array.from([0, 100_000, 200_000, 50_000]), unplacedUs: 0 };
    const scaled = scalePlacement(samples, 350_001);
    assert.ok(Math.abs(total(scaled) - 350_001) < 1e-9);
    assert.ok(Math.abs(timeOn(scaled, [2, 3]) - (250_000 * 350_001) / 350_000) < 1e-9);
  });
});
