import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openConsumer } from '../../src/attribution/consumers.js';
import {
  type DeviceKind,
  type DeviceRef,
  IDLE_POLICIES,
  type IdlePolicy,
  type MeasuredShares,
} from '../../src/attribution/engine.js';
import { attributeReadings, type NodeReading, readNodeCpuTimes } from '../../src/attribution/interval.js';
import { AttributionTotals } from '../../src/attribution/totals.js';
import { DomainType } from '../../src/platform/domains.js';
import { WrappingCounter } from '../../src/platform/energy-counter.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { loadTopology } from '../../src/platform/topology.js';
import { copyFixture, FIXTURES } from '../helpers/tmp.js';
import { procStat, put, type ScriptedProcess, writeProcess } from './helpers.js';

interface Step {
  t: number;
  cpus: [number, number][];
  usage_usec: Record<string, number | null>;
  procs: Record<string, ScriptedProcess | null>;
  energy_uj: Record<string, number | string>;
}
type Expected = Record<string, Record<string, number | 'unknown'> | 'missing'>;
interface Script {
  idlePowerW: Record<string, number>;
  devices: { id: string; zone: string; kind: DeviceKind; index: number }[];
  steps: Step[];
  expected: Expected[];
}

const script: Script = JSON.parse(readFileSync(`${FIXTURES}attribution/script.json`, 'utf8'));
const SCOPE = 'sys/fs/cgroup/system.slice/slurmstepd.scope';
const USER_HZ_US = 10_000;

/** Sets the node's kernel files to a step of the script. */
function apply(root: string, step: Step): void {
  put(root, 'proc/stat', procStat(step.cpus));
  for (const [job, usage] of Object.entries(step.usage_usec)) {
    if (usage === null) rmSync(join(root, SCOPE, job), { recursive: true, force: true });
    else put(root, `${SCOPE}/${job}/cpu.stat`, `usage_usec ${usage}\nuser_usec ${usage}\nsystem_usec 0\n`);
  }
  for (const [pid, p] of Object.entries(step.procs)) writeProcess(root, Number(pid), p);
  for (const [zone, value] of Object.entries(step.energy_uj)) {
    put(root, `sys/class/powercap/${zone}/energy_uj`, `${value}\n`);
  }
}

const refOf = (d: Script['devices'][number]): DeviceRef => ({
  kind: d.kind,
  domain: DomainType.Package,
  index: d.index,
});
const keyOf = (d: DeviceRef) => `${d.kind}:${d.index}`;

/** Plays the script on a copy of the fixture and returns the shares of every interval. */
function play(idlePolicy: IdlePolicy) {
  const root = copyFixture('attribution/node');
  const sys = new Sysroot(root);
  apply(root, script.steps[0]!);
  const topology = loadTopology(sys);
  const jobs = [
    openConsumer({ kind: 'slurm-job', jobId: 101 }, sys),
    openConsumer({ kind: 'slurm-job' }, sys, { SLURM_JOB_ID: '202' }),
  ];
  const counters = script.devices.map((d) => {
    const range = sys.readNumber(`/sys/class/powercap/${d.zone}/max_energy_range_uj`);
    return new WrappingCounter(BigInt(range) + 1n);
  });
  const read = (step: Step): NodeReading => ({
    timeS: step.t,
    cpuTimes: readNodeCpuTimes(sys, topology.numDomain(DomainType.Cpu)),
    energy: script.devices.map((d, i) => {
      let totalJ = Number.NaN;
      try {
        const update = counters[i]!.feed(BigInt(sys.readNumber(`/sys/class/powercap/${d.zone}/energy_uj`)));
        if (!update.anomaly) totalJ = Number(update.total) / 1e6;
      } catch {
        // an unreadable counter is a missing reading (NaN), never 0 J
      }
      return { device: refOf(d), totalJ };
    }),
    consumers: jobs.map((c) => ({ id: c.id, cpu: c.read() })),
  });
  const context = {
    topology,
    usPerTick: USER_HZ_US,
    idlePolicy,
    idlePowerW: (d: DeviceRef) => script.idlePowerW[keyOf(d)],
  };
  let previous = read(script.steps[0]!);
  return script.steps.slice(1).map((step) => {
    apply(root, step);
    const current = read(step);
    const shares = attributeReadings(previous, current, context);
    previous = current;
    return shares;
  });
}

function conserved(s: MeasuredShares): boolean {
  return s.consumers.reduce((sum, c) => sum + c.uj, 0) + s.unattributedUj + s.idleUj === s.measuredUj;
}

describe('attribution on a fixture node: two Slurm jobs, scripted counters', () => {
  it('shares match the hand-worked values to 1 µJ in every interval, and conservation is exact', () => {
    const intervals = play('none');
    assert.equal(intervals.length, script.expected.length);
    intervals.forEach((shares, i) => {
      for (const s of shares) {
        const want = script.expected[i]![keyOf(s.device)];
        const where = `interval ${i + 1}, ${keyOf(s.device)}`;
        assert.ok(want !== undefined, where);
        if (want === 'missing') {
          assert.equal(s.status, 'missing', where);
          continue;
        }
        assert.equal(s.status, 'ok', `${where}: ${JSON.stringify(s)}`);
        const m = s as MeasuredShares;
        assert.ok(conserved(m), where);
        const got: Record<string, number | 'unknown'> = { unattributed: m.unattributedUj, idle: m.idleUj };
        for (const c of m.consumers) got[c.id] = c.uj;
        for (const u of m.unknown) got[u.id] = 'unknown';
        assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), where);
        for (const [key, value] of Object.entries(want)) {
          if (value === 'unknown') assert.equal(got[key], 'unknown', `${where}: ${key}`);
          else
            assert.ok(
              Math.abs((got[key] as number) - value) <= 1,
              `${where}: ${key} = ${got[key]}, expected ${value}`,
            );
        }
      }
    });
  });

  it("the measured energy is the wrap-corrected counter delta, also across package 1's wrap", () => {
    const first = play('none')[0]!;
    const pkg1 = first.find((s) => keyOf(s.device) === 'package:1') as MeasuredShares;
    assert.equal(pkg1.measuredUj, 17_000_000);
  });

  it('a job that ended is reported with the reason, and its energy is not given to the other job', () => {
    const last = play('none')[3]!;
    const pkg0 = last.find((s) => keyOf(s.device) === 'package:0') as MeasuredShares;
    assert.equal(pkg0.unknown.length, 1);
    assert.match(
      pkg0.unknown[0]!.reason,
      /^slurm:202 .*job_202\/cpu.stat: no such file \(the cgroup is gone\)$/,
    );
  });

  it('every idle policy conserves energy in every interval; only where the idle part goes changes', () => {
    const totalsBy = new Map<IdlePolicy, AttributionTotals>();
    for (const policy of IDLE_POLICIES) {
      const totals = new AttributionTotals();
      for (const shares of play(policy)) {
        for (const s of shares) {
          if (s.status === 'ok') assert.ok(conserved(s), `${policy}: ${JSON.stringify(s)}`);
          totals.add(s);
        }
      }
      totalsBy.set(policy, totals);
    }
    const none = totalsBy.get('none')!.microjoules();
    for (const policy of IDLE_POLICIES) {
      const t = totalsBy.get(policy)!.microjoules();
      assert.equal(t.measured, none.measured);
      assert.equal(
        [...t.consumers.values()].reduce((a, b) => a + b, 0n) + t.unattributed + t.idle,
        t.measured,
      );
      assert.deepEqual(totalsBy.get(policy)!.missingIntervals, { count: 2, seconds: 2 });
    }
    // Idle of packages 0 and 1: 10 + 5, 10 + 5, 6 (capped at ΔE), 10 J. Every measured interval
    // had usage, so under cpu-time none of it stays idle.
    assert.equal(none.idle, 46_000_000n);
    assert.equal(totalsBy.get('cpu-time')!.microjoules().idle, 0n);
    assert.ok(totalsBy.get('equal')!.consumerJ('slurm:101') > totalsBy.get('none')!.consumerJ('slurm:101'));
  });
});
