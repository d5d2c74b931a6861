import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { roundMetrics } from '../../src/monitor/metrics.js';
import { summarizeRegions } from '../../src/monitor/model/round-stats.js';
import { PLAIN_POST, seriesSpec } from '../helpers/series-spec.js';

const close = (a: number, b: number, eps = 1e-6) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);
const spec = seriesSpec;
const post = PLAIN_POST;

describe('round metrics', () => {
  const times = [0, 1, 2, 3, 4];
  const specs = [
    spec('CPU_ENERGY-package-0', 'cpu', 'energy'),
    spec('GPU_POWER-gpu-0', 'gpu', 'power'),
    spec('CPU_UTILIZATION', 'cpu', 'util'),
  ];
  const data = {
    originMs: 0,
    times,
    values: [
      [0, 10, Number.NaN, 40, 50], // 50 J over 4 s
      [100, 100, 100, 100, 100], // 400 J
      [Number.NaN, 50, 50, 50, 50], // utilisation is stored in percent
    ],
  };

  it('sums counter and integrated power per group and host; power is energy over time', () => {
    const m = roundMetrics(specs, data, 4, [], post);
    close(m.host.groups.cpu!.energy, 50);
    assert.equal(m.host.groups.cpu!.method, 'counter');
    close(m.host.groups.cpu!.power, 12.5);
    close(m.host.groups.gpu!.energy, 400);
    assert.equal(m.host.groups.gpu!.method, 'power-integrated');
    close(m.host.groups.cpu!.util!, 50);
    close(m.host.energy, 450);
    close(m.host.power, 112.5);
    assert.ok(Number.isNaN(m.host.estimatedEnergy), 'measured hosts get no estimate');
  });

  it('applies power overhead per host, PUE to the run total, then CO2 and cost per kWh', () => {
    const m = roundMetrics(specs, data, 4, [], {
      powerOverhead: 10,
      pue: 1.5,
      emissionsFactor: 400,
      priceFactor: 0.3,
    });
    close(m.host.energy, 490);
    close(m.host.facilityEnergy, 735);
    close(m.host.co2, (735 / 3.6e6) * 400);
    close(m.host.money, (735 / 3.6e6) * 0.3);
  });

  it('estimates CPU power from utilisation only without a source, and never adds it to energy', () => {
    const only = [spec('CPU_UTILIZATION', 'cpu', 'util')];
    const m = roundMetrics(
      only,
      { originMs: 0, times, values: [[Number.NaN, 50, 50, 50, 50]] },
      4,
      [],
      post,
      {
        fullLoadWatts: 20,
        source: 'test',
      },
    );
    assert.ok(Number.isNaN(m.host.energy), 'no measured energy is NaN, never 0');
    close(m.host.estimatedEnergy, 40); // each utilisation reading covers the second before it: 10 W × 4 s
    assert.equal(m.host.groups.cpu!.method, 'estimated');
  });

  it('a run shorter than one period still gets utilisation from its exit sample; no data is NaN, not 0', () => {
    const only = [spec('CPU_UTILIZATION', 'cpu', 'util')];
    const est = { fullLoadWatts: 20, source: 'test' };
    const short = roundMetrics(
      only,
      { originMs: 0, times: [0, 0.5], values: [[Number.NaN, 25]] },
      0.5,
      [],
      post,
      est,
    );
    close(short.host.groups.cpu!.util!, 25);
    close(short.host.estimatedEnergy, 2.5);
    const none = roundMetrics(
      only,
      { originMs: 0, times: [0, 0.5], values: [[Number.NaN, Number.NaN]] },
      0.5,
      [],
      post,
      est,
    );
    assert.ok(Number.isNaN(none.host.estimatedEnergy));
    assert.ok(Number.isNaN(none.host.estimatedPower));
    const gpu = [spec('GPU_POWER-gpu-0', 'gpu', 'power')];
    const gap = roundMetrics(
      gpu,
      { originMs: 0, times: [0, 1, 2], values: [[5, Number.NaN, 5]] },
      2,
      [],
      post,
    );
    assert.ok(
      Number.isNaN(gap.host.groups.gpu!.energy),
      'power with no two adjacent readings has unknown energy',
    );
    assert.ok(Number.isNaN(gap.host.energy));
  });

  it('an estimate never exceeds its model maximum, for apps shorter than the sampled span', () => {
    // As a 0.07 s app is sampled: one reading just before the spawn, the next after the exit
    // (and the region channel's drain), so the samples span far more than the app's runtime.
    const only = [spec('CPU_UTILIZATION', 'cpu', 'util')];
    const est = { fullLoadWatts: 3.5, source: 'test' };
    for (const [times, runtime] of [
      [[-0.002, 0.3], 0.07],
      [[-0.001, 0.1, 0.26], 0.23],
      [[-0.01, 0.5, 1, 1.5, 2.2], 2],
    ] as const) {
      const m = roundMetrics(
        only,
        { originMs: 0, times: [...times], values: [[Number.NaN, ...times.slice(1).map(() => 100)]] },
        runtime,
        [],
        post,
        est,
      );
      assert.ok(m.host.estimatedPower <= 3.5 + 1e-9, `${m.host.estimatedPower} W > 3.5 W at ${runtime} s`);
      close(m.host.estimatedPower, 3.5);
      // The energy is over the sampled span, as measured energy is.
      close(m.host.estimatedEnergy, 3.5 * (times.at(-1)! - times[0]!));
    }
  });

  it('gives each region call its energy; nested and repeated calls pair by name', () => {
    const events = [
      { name: 'outer', kind: 'start' as const, t: 0 },
      { name: 'step', kind: 'start' as const, t: 0 },
      { name: 'step', kind: 'stop' as const, t: 1 },
      { name: 'step', kind: 'start' as const, t: 3 },
      { name: 'step', kind: 'stop' as const, t: 4 },
      { name: 'outer', kind: 'stop' as const, t: 4 },
    ];
    const m = roundMetrics(specs, data, 4, events, post);
    const steps = m.regions.filter((r) => r.name === 'step');
    assert.equal(steps.length, 2);
    close(steps[0]!.energy, 10 + 100);
    close(steps[1]!.energy, 10 + 100);
    close(m.regions.find((r) => r.name === 'outer')!.energy, 450);
    const summary = summarizeRegions([m]);
    const step = summary.find((s) => s.name === 'step')!;
    assert.equal(step.callsPerRound, 2);
    close(step.energy.mean, 110);
    close(step.power.mean, 110);
  });

  it('gives each region call the time-weighted CPU utilisation inside it; a gap is NaN', () => {
    const util = {
      originMs: 0,
      times,
      // each reading covers the interval before it: [0,1] 20 %, [1,2] 40 %, [2,3] gap, [3,4] 80 %
      values: [[Number.NaN, 20, 40, Number.NaN, 80]],
    };
    const events = [
      { name: 'whole', kind: 'start' as const, t: 0.5 },
      { name: 'whole', kind: 'stop' as const, t: 1.5 },
      { name: 'inGap', kind: 'start' as const, t: 2.2 },
      { name: 'inGap', kind: 'stop' as const, t: 2.8 },
      { name: 'last', kind: 'start' as const, t: 3 },
      { name: 'last', kind: 'stop' as const, t: 4 },
    ];
    const m = roundMetrics([spec('CPU_UTILIZATION', 'cpu', 'util')], util, 4, events, post);
    const of = (name: string) => m.regions.find((r) => r.name === name)!;
    close(of('whole').cpuUtil!, 30); // half of 20 % and half of 40 %
    assert.ok(Number.isNaN(of('inGap').cpuUtil!), 'no reading covers it: NaN, never 0');
    close(of('last').cpuUtil!, 80);
    assert.ok(Number.isNaN(of('last').gpuUtil!), 'no GPU series');
    const summary = summarizeRegions([m]);
    close(summary.find((s) => s.name === 'whole')!.cpuUtil!.mean, 30);
  });
});
