import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  attributeInterval,
  type DeviceRef,
  IDLE_POLICIES,
  type IdlePolicy,
  type IntervalInput,
  type MeasuredShares,
  splitByWeights,
  toMicrojoules,
} from '../../src/attribution/engine.js';
import { AttributionTotals, microjoulesToJoules } from '../../src/attribution/totals.js';
import { DomainType } from '../../src/platform/domains.js';
import { InvalidArgumentError } from '../../src/platform/errors.js';
import { seededRandom as rng } from '../helpers/random.js';

const PKG0: DeviceRef = { kind: 'package', domain: DomainType.Package, index: 0 };

function input(over: Partial<IntervalInput>): IntervalInput {
  return {
    device: PKG0,
    energyJ: 10,
    durationS: 1,
    idlePolicy: 'none',
    consumers: [],
    ...over,
  };
}

function measured(over: Partial<IntervalInput>): MeasuredShares {
  const shares = attributeInterval(input(over));
  assert.equal(shares.status, 'ok', JSON.stringify(shares));
  return shares as MeasuredShares;
}

/** Σ parts in integers; every part must be a whole, non-negative number of µJ. */
function conserved(s: MeasuredShares): boolean {
  const parts = [...s.consumers.map((c) => c.uj), s.unattributedUj, s.idleUj];
  for (const p of parts) assert.ok(Number.isSafeInteger(p) && p >= 0, `part ${p} is not whole µJ ≥ 0`);
  for (const c of s.consumers) assert.equal(c.uj, c.dynamicUj + c.idleUj);
  return parts.reduce((a, b) => a + b, 0) === s.measuredUj;
}

describe('attribution engine: edge cases', () => {
  it('splits dynamic energy by usage, leaves "other" unattributed and idle apart', () => {
    const s = measured({
      energyJ: 30,
      idlePowerW: 10,
      consumers: [
        { id: 'a', usage: 1_000_000 },
        { id: 'b', usage: 200_000 },
      ],
      deviceUsage: 1_600_000,
    });
    assert.deepEqual(
      s.consumers.map((c) => [c.id, c.uj]),
      [
        ['a', 12_500_000],
        ['b', 2_500_000],
      ],
    );
    assert.equal(s.unattributedUj, 5_000_000);
    assert.equal(s.idleUj, 10_000_000);
    assert.equal(s.measuredUj, 30_000_000);
    assert.ok(conserved(s));
  });

  it('zero energy: every part is 0 and still conserved', () => {
    const s = measured({ energyJ: 0, idlePowerW: 5, consumers: [{ id: 'a', usage: 10 }], deviceUsage: 10 });
    assert.equal(s.measuredUj, 0);
    assert.equal(s.consumers[0]!.uj, 0);
    assert.equal(s.idleUj, 0);
    assert.ok(conserved(s));
  });

  it('a negative ΔE is rejected: counters reaching the engine are wrap-corrected', () => {
    assert.throws(
      () => attributeInterval(input({ energyJ: -0.5 })),
      (e: unknown) => {
        assert.ok(e instanceof InvalidArgumentError);
        assert.match((e as Error).message, /package 0: energy -0.5 J is negative/);
        return true;
      },
    );
  });

  it('a NaN ΔE is a missing interval, reported as missing and never as 0 J', () => {
    const s = attributeInterval(input({ energyJ: Number.NaN, consumers: [{ id: 'a', usage: 5 }] }));
    assert.equal(s.status, 'missing');
    assert.equal('measuredUj' in s, false);
    assert.match((s as { reason: string }).reason, /not measured/);
  });

  it('idle power × dt above ΔE: idle is capped at ΔE and nothing is dynamic', () => {
    const s = measured({
      energyJ: 6,
      idlePowerW: 10,
      consumers: [{ id: 'a', usage: 500 }],
      deviceUsage: 1000,
    });
    assert.equal(s.idleUj, 6_000_000);
    assert.equal(s.consumers[0]!.uj, 0);
    assert.equal(s.unattributedUj, 0);
    assert.ok(conserved(s));
  });

  it('no consumers: dynamic energy is unattributed; idle too under cpu-time ("other" ran), else kept', () => {
    for (const idlePolicy of IDLE_POLICIES) {
      const s = measured({ energyJ: 3, idlePowerW: 1, idlePolicy, deviceUsage: 700 });
      assert.equal(s.consumers.length, 0);
      assert.equal(s.unattributedUj, idlePolicy === 'cpu-time' ? 3_000_000 : 2_000_000);
      assert.equal(s.idleUj, idlePolicy === 'cpu-time' ? 0 : 1_000_000);
      assert.ok(conserved(s));
    }
  });

  it('an unused device: its dynamic energy is unattributed, idle is kept even under cpu-time and equal', () => {
    for (const idlePolicy of IDLE_POLICIES) {
      const s = measured({
        energyJ: 3,
        idlePowerW: 2,
        idlePolicy,
        consumers: [{ id: 'a', usage: 0 }],
        deviceUsage: 0,
      });
      assert.equal(s.consumers[0]!.uj, 0);
      assert.equal(s.unattributedUj, 1_000_000);
      assert.equal(s.idleUj, 2_000_000);
    }
  });

  it('one consumer using all CPUs gets all the dynamic energy', () => {
    const s = measured({
      energyJ: 50,
      idlePowerW: 20,
      consumers: [{ id: 'all', usage: 4_000_000 }],
      deviceUsage: 4_000_000,
    });
    assert.equal(s.consumers[0]!.uj, 30_000_000);
    assert.equal(s.unattributedUj, 0);
    assert.equal(s.idleUj, 20_000_000);
  });

  it('consumers above the device total (coarse /proc/stat ticks): no negative "other", all dynamic shared', () => {
    const s = measured({
      energyJ: 9,
      consumers: [
        { id: 'a', usage: 600_000 },
        { id: 'b', usage: 300_004 },
      ],
      deviceUsage: 900_000,
    });
    assert.equal(s.unattributedUj, 0);
    assert.ok(Math.abs(s.consumers[0]!.uj - (9e6 * 600_000) / 900_004) <= 1);
    assert.ok(conserved(s));
  });

  it('an unreadable consumer is listed with its reason; its energy stays inside unattributed', () => {
    const s = measured({
      energyJ: 4,
      consumers: [
        { id: 'a', usage: 100 },
        { id: 'gone', usage: Number.NaN, reason: 'cpu.stat: permission denied' },
      ],
      deviceUsage: 400,
    });
    assert.deepEqual(s.unknown, [{ id: 'gone', reason: 'cpu.stat: permission denied' }]);
    assert.deepEqual(
      s.consumers.map((c) => c.id),
      ['a'],
    );
    assert.equal(s.consumers[0]!.uj, 1_000_000);
    assert.equal(s.unattributedUj, 3_000_000);
  });

  it('unknown device total: the known consumers share all the dynamic energy and say so', () => {
    const s = measured({
      energyJ: 2,
      consumers: [
        { id: 'a', usage: 3 },
        { id: 'b', usage: 1 },
      ],
      deviceUsage: Number.NaN,
    });
    assert.equal(s.otherKnown, false);
    assert.deepEqual(
      s.consumers.map((c) => c.uj),
      [1_500_000, 500_000],
    );
    assert.equal(s.unattributedUj, 0);
  });

  it('idle policies: none keeps it, cpu-time splits it like the dynamic part, equal splits it per active consumer', () => {
    const base = {
      energyJ: 16,
      idlePowerW: 6,
      consumers: [
        { id: 'a', usage: 3 },
        { id: 'b', usage: 1 },
        { id: 'idle-one', usage: 0 },
      ],
      deviceUsage: 8,
    };
    const byPolicy = (idlePolicy: IdlePolicy) => measured({ ...base, idlePolicy });
    const none = byPolicy('none');
    assert.deepEqual(
      none.consumers.map((c) => c.uj),
      [3_750_000, 1_250_000, 0],
    );
    assert.equal(none.unattributedUj, 5_000_000);
    assert.equal(none.idleUj, 6_000_000);

    const cpuTime = byPolicy('cpu-time');
    assert.deepEqual(
      cpuTime.consumers.map((c) => [c.dynamicUj, c.idleUj]),
      [
        [3_750_000, 2_250_000],
        [1_250_000, 750_000],
        [0, 0],
      ],
    );
    assert.equal(cpuTime.unattributedUj, 5_000_000 + 3_000_000);
    assert.equal(cpuTime.idleUj, 0);

    const equal = byPolicy('equal');
    assert.deepEqual(
      equal.consumers.map((c) => c.idleUj),
      [3_000_000, 3_000_000, 0],
    );
    assert.equal(equal.unattributedUj, 5_000_000);
    assert.equal(equal.idleUj, 0);
    for (const s of [none, cpuTime, equal]) assert.ok(conserved(s));
  });

  it('rejects impossible input with the device named', () => {
    const bad: Partial<IntervalInput>[] = [
      { durationS: 0 },
      { durationS: Number.NaN },
      { idlePowerW: -1 },
      { idlePowerW: Number.NaN },
      { deviceUsage: -1 },
      { idlePolicy: 'half' as IdlePolicy },
      { consumers: [{ id: 'a', usage: -1 }] },
      {
        consumers: [
          { id: 'a', usage: 1 },
          { id: 'a', usage: 2 },
        ],
      },
      { energyJ: 1e13 },
    ];
    for (const over of bad) {
      assert.throws(() => attributeInterval(input(over)), /package 0: /, JSON.stringify(over));
    }
  });
});

describe('attribution engine: properties over random intervals', () => {
  it('conservation is exact and every share is within 1 µJ of its exact value (5,000 intervals)', () => {
    const rand = rng(20240611);
    for (let n = 0; n < 5000; n++) {
      const consumerCount = Math.floor(rand() * 7);
      // Usage in µs (integers, like cgroup counters) or fractions (like cgroup time spread over CPUs).
      const consumers = Array.from({ length: consumerCount }, (_, i) => {
        const r = rand();
        let usage = Math.floor(rand() * 4_000_000);
        if (r < 0.15) usage = 0;
        else if (r < 0.35) usage = rand() * 1e6;
        else if (r < 0.4) usage = Number.NaN;
        return { id: `c${i}`, usage };
      });
      const knownSum = consumers.reduce((s, c) => s + (Number.isNaN(c.usage) ? 0 : c.usage), 0);
      const r = rand();
      const deviceUsage = r < 0.1 ? undefined : r < 0.2 ? knownSum * rand() : knownSum + rand() * 2e6;
      // Energies from whole µJ (RAPL), from mJ (NVML), from J fractions, and tiny or huge ones.
      const e = rand();
      const energyJ =
        e < 0.05
          ? 0
          : e < 0.3
            ? Math.floor(rand() * 5e8) / 1e6
            : e < 0.5
              ? Math.floor(rand() * 1e6) / 1e3
              : e < 0.55
                ? rand() * 1e-5
                : e < 0.6
                  ? rand() * 5e6
                  : rand() * 400;
      const durationS = 0.01 + rand() * 10;
      const idlePowerW = rand() < 0.3 ? undefined : rand() * 150;
      const idlePolicy = IDLE_POLICIES[Math.floor(rand() * 3)]!;
      const inp = input({ energyJ, durationS, idlePowerW, idlePolicy, consumers, deviceUsage });
      const s = attributeInterval(inp);
      assert.equal(s.status, 'ok');
      const m = s as MeasuredShares;
      const where = `case ${n}: ${JSON.stringify(inp)}`;
      assert.ok(conserved(m), where);
      assert.equal(m.measuredUj, toMicrojoules(energyJ), where);

      // Exact shares in real numbers, then compared part by part.
      const idleModel = idlePowerW === undefined ? 0 : toMicrojoules(idlePowerW * durationS);
      const idle = Math.min(m.measuredUj, idleModel);
      const dynamic = m.measuredUj - idle;
      const known = consumers.filter((c) => !Number.isNaN(c.usage));
      const other = deviceUsage === undefined ? 0 : Math.max(0, deviceUsage - knownSum);
      const total = knownSum + other;
      known.forEach((c, i) => {
        const exactDynamic = total > 0 ? (dynamic * c.usage) / total : 0;
        assert.ok(
          Math.abs(m.consumers[i]!.dynamicUj - exactDynamic) <= 1 + 1e-6,
          `${where}: dynamic of ${c.id}`,
        );
        let exactIdle = 0;
        if (idlePolicy === 'cpu-time' && total > 0) exactIdle = (idle * c.usage) / total;
        const active = known.filter((k) => k.usage > 0).length;
        if (idlePolicy === 'equal' && c.usage > 0) exactIdle = idle / active;
        assert.ok(Math.abs(m.consumers[i]!.idleUj - exactIdle) <= 1 + 1e-6, `${where}: idle of ${c.id}`);
      });
      assert.deepEqual(
        m.unknown.map((u) => u.id),
        consumers.filter((c) => Number.isNaN(c.usage)).map((c) => c.id),
      );
    }
  });

  it('splitByWeights: sums exactly, stays within 1 of the exact share, gives zero weights nothing', () => {
    const rand = rng(7);
    for (let n = 0; n < 3000; n++) {
      const total = Math.floor(rand() * 10 ** Math.floor(rand() * 15));
      const weights = Array.from({ length: 1 + Math.floor(rand() * 9) }, () =>
        rand() < 0.2 ? 0 : rand() < 0.5 ? Math.floor(rand() * 1e7) : rand() * 1e-3,
      );
      if (!weights.some((w) => w > 0)) weights[0] = 1;
      const parts = splitByWeights(total, weights);
      const sum = weights.reduce((a, b) => a + b, 0);
      assert.equal(
        parts.reduce((a, b) => a + b, 0),
        total,
      );
      parts.forEach((p, i) => {
        assert.ok(Number.isSafeInteger(p) && p >= 0);
        if (weights[i] === 0) assert.equal(p, 0);
        assert.ok(Math.abs(p - (total * weights[i]!) / sum) <= 1 + 1e-6 * Math.max(1, total / 1e9));
      });
    }
  });

  it('splitByWeights: equal weights differ by at most 1 µJ, earlier entries take the extra units', () => {
    assert.deepEqual(splitByWeights(10, [1, 1, 1]), [4, 3, 3]);
    assert.deepEqual(splitByWeights(2, [1, 1, 1]), [1, 1, 0]);
    assert.throws(() => splitByWeights(5, [0, 0]), InvalidArgumentError);
  });
});

describe('attribution totals', () => {
  it('sums intervals exactly past 2^53 µJ and counts missing intervals apart', () => {
    const totals = new AttributionTotals();
    const big = 4e9; // J: 4e15 µJ per interval, three of them pass 2^53 µJ
    for (let i = 0; i < 3; i++) {
      totals.add(
        attributeInterval(input({ energyJ: big, consumers: [{ id: 'a', usage: 1 }], deviceUsage: 4 })),
      );
    }
    totals.add(attributeInterval(input({ energyJ: Number.NaN, durationS: 2.5 })));
    const uj = totals.microjoules();
    assert.equal(uj.measured, 3n * 4_000_000_000_000_000n);
    assert.equal(uj.consumers.get('a')! + uj.unattributed + uj.idle, uj.measured);
    assert.equal(uj.consumers.get('a'), 3n * 1_000_000_000_000_000n);
    assert.equal(totals.consumerJ('a'), 3e9);
    assert.deepEqual(totals.missingIntervals, { count: 1, seconds: 2.5 });
    assert.equal(microjoulesToJoules(1_500_001n), 1.500001);
  });
});
