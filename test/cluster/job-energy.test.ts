import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ExportedCounter } from '../../src/cluster/exporter/counter.js';
import { parseListen } from '../../src/cluster/exporter/settings.js';
import { type CounterSample, counterWindowEnergy } from '../../src/cluster/job-report/counter-window.js';
import { expandHostlist } from '../../src/cluster/job-report/hostlist.js';
import { promqlRegexLiteral } from '../../src/cluster/job-report/prometheus.js';
import { parseScontrolJob } from '../../src/cluster/job-report/slurm-job.js';

/** Samples of a counter growing at `watts` from `t0` every `step` s up to `t1`, from value `v0`. */
function ramp(t0: number, t1: number, step: number, watts: number, v0 = 0): CounterSample[] {
  const out: CounterSample[] = [];
  for (let t = t0; t <= t1 + 1e-9; t += step) out.push({ t, v: v0 + watts * (t - t0) });
  return out;
}

describe('counterWindowEnergy', () => {
  it('interpolates the window ends inside their segments', () => {
    const e = counterWindowEnergy(ramp(0, 100, 10, 5), 12, 47);
    assert.ok(Math.abs(e.joules - 5 * 35) < 1e-9, String(e.joules));
    assert.equal(e.coveredS, 35);
    assert.deepEqual(e.gaps, []);
  });

  it('counts a counter restart as Prometheus does and states the segment as a gap', () => {
    // The exporter restarted between t=40 and t=50: at t=50 it has counted 20 J since its start.
    const samples = [...ramp(0, 40, 10, 5, 1000), ...ramp(50, 100, 10, 5, 20)];
    const e = counterWindowEnergy(samples, 0, 100);
    assert.equal(e.joules, 5 * 40 + 20 + 5 * 50);
    assert.deepEqual(e.gaps, [{ kind: 'restart', start: 40, end: 50 }]);
    assert.equal(e.coveredS, 90);
  });

  it('bridges missed scrapes when the counter kept counting, and says so', () => {
    const samples = ramp(0, 100, 10, 5).filter((s) => s.t < 35 || s.t > 65);
    const e = counterWindowEnergy(samples, 0, 100);
    assert.ok(Math.abs(e.joules - 500) < 1e-9);
    assert.deepEqual(e.gaps, [{ kind: 'bridged', start: 30, end: 70 }]);
    assert.equal(e.coveredS, 100);
  });

  it('states window parts without samples as no-data, never as zero energy', () => {
    const e = counterWindowEnergy(ramp(30, 80, 10, 5), 0, 100);
    assert.equal(e.joules, 250);
    assert.deepEqual(e.gaps, [
      { kind: 'no-data', start: 0, end: 30 },
      { kind: 'no-data', start: 80, end: 100 },
    ]);
    assert.equal(e.coveredS, 50);
    const none = counterWindowEnergy([], 0, 100);
    assert.ok(Number.isNaN(none.joules));
    assert.equal(none.coveredS, 0);
  });
});

describe('exporter counter and options', () => {
  it('publishes 0 at start, then the source increases; a source restart adds nothing for that step', () => {
    const c = new ExportedCounter();
    assert.deepEqual(
      [5000, 5010, 5012.5, 3, 7].map((v) => c.feed(v)),
      [0, 10, 12.5, 12.5, 16.5],
    );
    assert.equal(c.restarts, 1);
  });

  it('parses listen addresses', () => {
    assert.deepEqual(parseListen('127.0.0.1:9863'), { host: '127.0.0.1', port: 9863 });
    assert.deepEqual(parseListen('[::1]:80'), { host: '::1', port: 80 });
    assert.deepEqual(parseListen(':9863'), { host: '0.0.0.0', port: 9863 });
    assert.throws(() => parseListen('localhost'), /expected HOST:PORT/);
    assert.throws(() => parseListen('a:70000'), /expected HOST:PORT/);
  });
});

describe('job report helpers', () => {
  it('expands Slurm host lists', () => {
    assert.deepEqual(expandHostlist('node[01-03,07],gpu5'), ['node01', 'node02', 'node03', 'node07', 'gpu5']);
    assert.deepEqual(expandHostlist('r[1-2]-n[8-9]'), ['r1-n8', 'r1-n9', 'r2-n8', 'r2-n9']);
    assert.deepEqual(expandHostlist('a,b,a'), ['a', 'b']);
    assert.throws(() => expandHostlist('node[1-'), /unbalanced brackets/);
    assert.throws(() => expandHostlist('node[3-1]'), /runs backwards/);
    assert.throws(() => expandHostlist(''), /names no host/);
  });

  it('reads nodes and times from scontrol show job -o', () => {
    const line =
      'JobId=77 JobName=a UserId=u(1000) JobState=COMPLETED StartTime=2026-12-03T10:00:00 EndTime=2026-12-03T11:30:00 NodeList=cn[01-02] BatchHost=cn01';
    assert.deepEqual(parseScontrolJob(line), {
      nodeList: 'cn[01-02]',
      start: Date.parse('2026-12-03T10:00:00') / 1000,
      end: Date.parse('2026-12-03T11:30:00') / 1000,
    });
    assert.deepEqual(parseScontrolJob('JobId=78 StartTime=Unknown EndTime=Unknown NodeList=(null)'), {
      nodeList: undefined,
      start: undefined,
      end: undefined,
    });
  });

  it('escapes node names for a PromQL regex', () => {
    assert.equal(promqlRegexLiteral('n1.cluster'), 'n1\\\\.cluster');
    assert.equal(promqlRegexLiteral('a"b'), 'a\\"b');
  });
});
