import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CpuReading } from '../../src/attribution/consumers.js';
import type { DeviceRef, MeasuredShares } from '../../src/attribution/engine.js';
import { attributeReadings, intervalInputs, type NodeReading } from '../../src/attribution/interval.js';
import { DomainType } from '../../src/platform/domains.js';
import { Topology } from '../../src/platform/topology.js';
import { proc } from './helpers.js';

// 2 packages × 2 CPUs and one GPU; readings built by hand to drive the sampler-facing function.
const topology = new Topology({
  cpus: [0, 1, 2, 3].map((cpu) => ({ cpu, packageId: cpu >> 1, coreId: cpu & 1 })),
  numa: [],
  gpus: [{ cpus: [0, 1, 2, 3] }],
});
const PKG0: DeviceRef = { kind: 'package', domain: DomainType.Package, index: 0 };
const GPU0: DeviceRef = { kind: 'gpu', domain: DomainType.Gpu, index: 0 };
const context = { topology, usPerTick: 10_000, idlePolicy: 'none' as const };

function cpuTimes(busy: number[]) {
  const total = busy.map((b) => b + 1000);
  return {
    busy: Float64Array.from(busy),
    total: Float64Array.from(total),
    allBusy: busy.reduce((a, b) => a + b, 0),
    allTotal: total.reduce((a, b) => a + b, 0),
  };
}

function reading(
  timeS: number,
  energy: [DeviceRef, number][],
  consumers: [string, CpuReading][],
  busy = [0, 0, 0, 0],
): NodeReading {
  return {
    timeS,
    cpuTimes: cpuTimes(busy),
    energy: energy.map(([device, totalJ]) => ({ device, totalJ })),
    consumers: consumers.map(([id, cpu]) => ({ id, cpu })),
  };
}

const tree = (own: number, processor: number): CpuReading => ({
  ok: true,
  processes: [proc(10, 1, 100, own, 0, processor)],
  warnings: [],
});

describe('readings → engine input', () => {
  it("GPU energy: split by per-process utilisation·s against the GPU's own utilisation", () => {
    const before = reading(
      0,
      [[GPU0, 100]],
      [
        ['a', tree(0, 0)],
        ['b', tree(0, 0)],
      ],
    );
    const after = {
      ...reading(
        2,
        [[GPU0, 160]],
        [
          ['a', tree(0, 0)],
          ['b', tree(0, 0)],
        ],
      ),
      gpus: [{ index: 0, deviceUtilSeconds: 1.6, consumers: [{ id: 'a', utilSeconds: 1.2 }] }],
    };
    const [s] = attributeReadings(before, after, {
      ...context,
      idlePowerW: (d) => (d.kind === 'gpu' ? 10 : undefined),
    });
    const m = s as MeasuredShares;
    assert.equal(m.idleUj, 20_000_000);
    assert.deepEqual(
      m.consumers.map((c) => [c.id, c.uj]),
      [
        ['a', 30_000_000],
        ['b', 0],
      ],
    );
    assert.equal(m.unattributedUj, 10_000_000);
  });

  it('GPU energy: a consumer owning the whole GPU gets all its dynamic energy; no use sample → unknown', () => {
    const before = reading(
      0,
      [[GPU0, 0]],
      [
        ['job', tree(0, 0)],
        ['other', tree(0, 0)],
      ],
    );
    const owned = {
      ...reading(
        1,
        [[GPU0, 7]],
        [
          ['job', tree(0, 0)],
          ['other', tree(0, 0)],
        ],
      ),
      gpus: [{ index: 0, owner: 'job', consumers: [] }],
    };
    const m = attributeReadings(before, owned, context)[0] as MeasuredShares;
    assert.deepEqual(
      m.consumers.map((c) => c.uj),
      [7_000_000, 0],
    );
    const unsampled = reading(1, [[GPU0, 7]], [['job', tree(0, 0)]]);
    const u = attributeReadings(before, unsampled, context)[0] as MeasuredShares;
    assert.deepEqual(u.unknown, [{ id: 'job', reason: 'no use sample of GPU 0' }]);
    assert.equal(u.unattributedUj, 7_000_000);
  });

  it('CPU energy: per-package usage from where each process ran; a new consumer has no interval yet', () => {
    const before = reading(0, [[PKG0, 0]], [['a', tree(100, 0)]], [0, 0, 0, 0]);
    const after = reading(
      1,
      [[PKG0, 8]],
      [
        ['a', tree(130, 1)],
        ['late', tree(5, 0)],
      ],
      [50, 30, 20, 0],
    );
    const [input] = intervalInputs(before, after, context);
    assert.deepEqual(input!.consumers, [
      { id: 'a', usage: 300_000 },
      { id: 'late', usage: Number.NaN, reason: 'no earlier reading of this consumer' },
    ]);
    assert.equal(input!.deviceUsage, 800_000);
    const m = attributeReadings(before, after, context)[0] as MeasuredShares;
    assert.equal(m.consumers[0]!.uj, 3_000_000);
    assert.equal(m.unattributedUj, 5_000_000);
  });

  it('a cgroup counter that went backwards (recreated) is unknown with the reason; no /proc/stat → other unknown', () => {
    const cg = (usageUs: number): CpuReading => ({
      ok: true,
      processes: [],
      cgroup: { usageUs, cpus: [0] },
      warnings: [],
    });
    const before = { ...reading(0, [[PKG0, 0]], [['cg', cg(5000)]]), cpuTimes: undefined };
    const after = { ...reading(1, [[PKG0, 1]], [['cg', cg(10)]]), cpuTimes: undefined };
    const [input] = intervalInputs(before, after, context);
    assert.equal(input!.consumers[0]!.reason, 'cgroup CPU time went backwards (the cgroup was recreated)');
    assert.ok(Number.isNaN(input!.deviceUsage!));
    const grown = { ...reading(1, [[PKG0, 1]], [['cg', cg(9000)]]), cpuTimes: undefined };
    const m = attributeReadings(before, grown, context)[0] as MeasuredShares;
    assert.equal(m.otherKnown, false);
    assert.equal(m.consumers[0]!.uj, 1_000_000);
  });

  it('a device counter missing from either reading is a missing interval; time must advance', () => {
    const before = reading(0, [[PKG0, Number.NaN]], []);
    const after = reading(1, [[PKG0, 4]], []);
    assert.equal(attributeReadings(before, after, context)[0]!.status, 'missing');
    assert.equal(attributeReadings(reading(0, [], []), after, context)[0]!.status, 'missing');
    assert.throws(() => intervalInputs(after, after, context), /time must advance/);
  });
});
