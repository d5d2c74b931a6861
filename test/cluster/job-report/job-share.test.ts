import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CounterSample } from '../../../src/cluster/job-report/counter-window.js';
import {
  CONSUMER_COUNTER,
  consumerWindowEnergy,
  jobEnergy,
  slurmConsumer,
} from '../../../src/cluster/job-report/job-energy.js';
import type { PrometheusClient, RangeSeries } from '../../../src/cluster/job-report/prometheus.js';
import { renderJobCsv, renderJobText } from '../../../src/cluster/job-report/render.js';

/** A counter growing at `watts` every second from t0 to t1, from value v0. */
function ramp(t0: number, t1: number, watts: number, v0 = 0): CounterSample[] {
  const out: CounterSample[] = [];
  for (let t = t0; t <= t1; t++) out.push({ t, v: v0 + watts * (t - t0) });
  return out;
}

const FACTORS = { pue: 1, emissionsFactor: 230, priceFactor: 0.3, priceUnit: '€' };

/** Prometheus answering each query with the series whose labels its selector names. */
function fakePrometheus(series: RangeSeries[]): { client: PrometheusClient; queries: string[] } {
  const queries: string[] = [];
  const client = {
    rangeVector: async (expr: string) => {
      queries.push(expr);
      return expr.startsWith(CONSUMER_COUNTER)
        ? series.filter((s) => s.labels.__name__ === CONSUMER_COUNTER)
        : series.filter((s) => s.labels.__name__ !== CONSUMER_COUNTER);
    },
  } as unknown as PrometheusClient;
  return { client, queries };
}

const pkg = (node: string, samples: CounterSample[]): RangeSeries => ({
  labels: { __name__: 'joulegate_package_energy_joules_total', node, package: '0' },
  samples,
});
const share = (node: string, device: string, samples: CounterSample[]): RangeSeries => ({
  labels: { __name__: CONSUMER_COUNTER, node, consumer: 'slurm:42', device },
  samples,
});

describe("a job's own share of its nodes' energy", () => {
  it('reads a per-consumer counter from 0 one scrape before its first sample', () => {
    // The exporter saw the job at t=109 and gave it 3 W from then: first sample 3 J at t=110.
    const e = consumerWindowEnergy(ramp(110, 130, 3, 3), 100, 130, 1);
    assert.equal(e.joules, 3 * 21);
    // Before the exporter saw the job its share is unknown: stated, not zero.
    assert.deepEqual(e.gaps, [{ kind: 'no-data', start: 100, end: 109 }]);
    assert.equal(e.coveredS, 21);
  });

  it('only Slurm job numbers have a consumer', () => {
    assert.equal(slurmConsumer('42'), 'slurm:42');
    assert.equal(slurmConsumer('42_1'), undefined);
    assert.equal(slurmConsumer(undefined), undefined);
  });

  it('reports per node and in total, next to the node energy, with the method and a node without counters', async () => {
    const { client, queries } = fakePrometheus([
      pkg('a', ramp(90, 140, 100, 5000)),
      pkg('b', ramp(90, 140, 50, 7000)),
      share('a', 'package', ramp(100, 140, 30, 30)),
      share('a', 'gpu', ramp(100, 140, 10, 10)),
      share('a', 'board', ramp(100, 140, 99, 99)), // not a device the engine splits: ignored
    ]);
    const r = await jobEnergy(
      client,
      'http://p/',
      { job: '42', nodes: ['a', 'b'], start: 100, end: 130, intervalS: 1 },
      FACTORS,
      200,
    );
    assert.ok(queries[1]!.includes(`${CONSUMER_COUNTER}{consumer="slurm:42",node=~"a|b"}`), queries[1]);
    const [a, b] = r.nodes;
    assert.equal(a!.joules, 100 * 30);
    assert.equal(a!.job!.joules, (30 + 10) * 30);
    assert.deepEqual(
      a!.job!.devices.map((d) => d.kind),
      ['package', 'gpu'],
    );
    assert.ok(Number.isNaN(b!.job!.joules));
    assert.equal(r.jobShare!.energy, 1200);
    assert.equal(r.jobShare!.complete, false);
    assert.ok(
      r.gaps.some((g) => g.startsWith(`b: no ${CONSUMER_COUNTER}{consumer="slurm:42"}`)),
      r.gaps.join('\n'),
    );
    const text = renderJobText(r);
    assert.match(text, /\| +Node \| +Energy \|.*\| +Job share \| +Share coverage \| +Share by device \|/);
    assert.match(
      text,
      /\| +a \| 3\.000 kJ \|.*\| +1\.200 kJ \| +100\.0 % \| package 900\.000 J, gpu 300\.000 J \|/,
    );
    assert.match(
      text,
      /^Job share \(slurm:42\): 1\.200 kJ \(26\.7 % of the nodes' energy\) \(incomplete: a lower bound\)\.$/m,
    );
    assert.match(text, /^Method: job share = each package's and DRAM's energy split .* by CPU time/m);
    const csv = renderJobCsv(r);
    assert.match(csv, /^42,a,job-package,,900,30,30,0$/m);
    assert.match(csv, /^42,a,job,,1200,30,30,$/m);
    assert.match(csv, /^42,,job-total,,1200,,30,$/m);
  });

  it('has no share section for a window without a Slurm job', async () => {
    const { client, queries } = fakePrometheus([pkg('a', ramp(90, 140, 100))]);
    const r = await jobEnergy(client, 'http://p/', { nodes: ['a'], start: 100, end: 130 }, FACTORS, 200);
    assert.equal(queries.length, 1);
    assert.equal(r.jobShare, undefined);
    assert.doesNotMatch(renderJobText(r), /Job share/);
  });
});
