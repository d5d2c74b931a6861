import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type {
  HostMetrics,
  RegionCallMetrics,
  Report,
  RoundReport,
} from '../../src/monitor/model/report-model.js';
import { stat } from '../../src/monitor/model/round-stats.js';
import { KEPT_ROUNDS, KEPT_SAMPLE_VALUES, RoundCollector } from '../../src/monitor/round-collector.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

function host(k: number): HostMetrics {
  // Awkward values (not exactly representable, an Infinity, a NaN) so that any other
  // summation order or rule than stat()'s shows.
  const runtime = 0.1 + k / 7;
  return {
    runtime,
    energy: k * 1.1,
    power: k === 3 ? Number.POSITIVE_INFINITY : 11 / runtime,
    estimatedEnergy: k % 5 === 0 ? Number.NaN : k / 3,
    estimatedPower: 0,
    facilityEnergy: k * 1.3,
    co2: k * 0.01,
    money: k * 0.001,
    groups: {},
  };
}

function call(name: string, k: number): RegionCallMetrics {
  return {
    name,
    start: 0,
    stop: k,
    depth: 0,
    open: false,
    runtime: k / 3,
    energy: k * 2.2,
    power: 6.6,
    estimatedEnergy: Number.NaN,
    groupEnergy: {},
    cpuUtil: k,
  };
}

function round(k: number, samples = 3, calls: RegionCallMetrics[] = []): RoundReport {
  return {
    id: String(k),
    exit: { status: 0, code: 0, signal: '' },
    overruns: 0,
    times: Array.from({ length: samples }, (_, i) => i),
    values: [Array.from({ length: samples }, () => k)],
    events: [],
    metrics: { host: host(k), regions: calls, problems: [] },
  };
}

describe('RoundCollector', () => {
  it('keeps the first rounds whole and summarises every round exactly as stat() does', () => {
    const c = new RoundCollector();
    const n = KEPT_ROUNDS + 50;
    const hosts: HostMetrics[] = [];
    const calls: RegionCallMetrics[] = [];
    for (let k = 0; k < n; k++) {
      const mine = k % 2 === 0 ? [call('solve', k), call('io', k + 1)] : [call('solve', k)];
      calls.push(...mine);
      hosts.push(host(k));
      c.add(round(k, 3, mine));
    }
    assert.equal(c.kept.length, KEPT_ROUNDS);
    assert.deepEqual(
      c.kept.map((r) => r.id),
      Array.from({ length: KEPT_ROUNDS }, (_, k) => String(k)),
    );
    assert.equal(c.omitted, 50);
    assert.deepEqual(c.summary(), {
      runtime: stat(hosts.map((h) => h.runtime)),
      energy: stat(hosts.map((h) => h.facilityEnergy)),
      power: stat(hosts.map((h) => h.power)),
      estimated_energy: stat(hosts.map((h) => h.estimatedEnergy)),
      co2: stat(hosts.map((h) => h.co2)),
      money: stat(hosts.map((h) => h.money)),
    });
    const regions = c.regionSummary();
    assert.deepEqual(
      regions.map((r) => [r.name, r.callsPerRound]),
      [
        ['solve', 1],
        ['io', n / 2 / n],
      ],
    );
    const solve = calls.filter((x) => x.name === 'solve');
    assert.deepEqual(regions[0]!.runtime, stat(solve.map((x) => x.runtime)));
    assert.deepEqual(regions[0]!.energy, stat(solve.map((x) => x.energy)));
    assert.deepEqual(regions[0]!.cpuUtil, stat(solve.map((x) => x.cpuUtil!)));
    assert.ok(Number.isNaN(regions[0]!.estimatedEnergy.mean));
  });

  it('keeps a failed last round, and no more samples than its budget', () => {
    const c = new RoundCollector();
    // The first round is kept whatever its size; it uses up the sample budget.
    assert.equal(c.add(round(0, KEPT_SAMPLE_VALUES)), true);
    assert.equal(c.add(round(1)), false);
    assert.equal(c.add(round(2), true), true);
    assert.deepEqual(
      c.kept.map((r) => r.id),
      ['0', '2'],
    );
    assert.equal(c.omitted, 1);
    assert.equal(c.summary().runtime!.sum, stat([0, 1, 2].map((k) => host(k).runtime)).sum);
  });
});

describe('monitor --rounds beyond what a report keeps whole', () => {
  it('keeps the first rounds, says so, and counts every round in the statistics', async () => {
    const out = tempDir();
    const n = KEPT_ROUNDS + 20;
    const r = await runCli(
      ['monitor', '--rounds', String(n), '--format', 'json,text', '--data-out', out, '--', 'true'],
      { cwd: out, timeoutMs: 120_000 },
    );
    assert.equal(r.code, 0, r.stderr);
    const json = readdirSync(out).find((f) => f.endsWith('.json'))!;
    const report = JSON.parse(readFileSync(join(out, json), 'utf8'), (_k, v) =>
      v === null ? Number.NaN : v,
    ) as Report;
    assert.equal(report.rounds.length, KEPT_ROUNDS);
    assert.equal(report.omittedRounds, 20);
    const note = report.unavailable.find((d) => d.reason.startsWith('20 of 120 rounds'));
    assert.ok(note, JSON.stringify(report.unavailable));
    assert.match(note.reason, /only in the summary statistics/);
    // sum / mean of the runtimes = the number of rounds summarised.
    const runtime = report.summary.runtime!;
    assert.equal(Math.round(runtime.sum / runtime.mean), n);
    assert.match(r.stdout, new RegExp(`rounds: ${n}\\n`));
    assert.match(r.stdout, new RegExp(`Across ${n} rounds \\(mean ± std\\)`));
    assert.match(r.stdout, /The application has been run 120 times\./);
  });
});
