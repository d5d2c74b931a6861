import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { runCli } from '../helpers/cli.js';
import { paddedStat, tickerSource } from '../helpers/proc-stat.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const readJson = (path: string) =>
  JSON.parse(readFileSync(path, 'utf8'), (_k, v) => (v === null ? Number.NaN : v)) as Report;

async function monitorJson(args: string[], command: string[], env: Record<string, string> = {}) {
  const out = tempDir();
  const r = await runCli(['monitor', '--format', 'json,text', '--data-out', out, ...args, '--', ...command], {
    cwd: out,
    env,
  });
  assert.equal(r.code, 0, r.stderr);
  const json = readdirSync(out).find((f) => f.endsWith('.json'))!;
  return { r, report: readJson(join(out, json)), out };
}

describe('run id and creation time', () => {
  it('are the start of the run, not the moment the report is written', async () => {
    const dir = tempDir();
    const stamp = join(dir, 'app-started');
    // The app notes when it started, then runs 1.5 s.
    const app = `require('node:fs').writeFileSync(${JSON.stringify(stamp)}, String(Date.now())); setTimeout(() => {}, 1500);`;
    const { report } = await monitorJson([], [process.execPath, '-e', app]);
    const ended = Date.now();
    const created = Date.parse(report.created);
    const appStarted = Number(readFileSync(stamp, 'utf8'));
    assert.ok(created <= appStarted, `created ${report.created} after the app started`);
    assert.ok(ended - created >= 1500, `created ${ended - created} ms before the end`);
    assert.equal(report.runId, report.created.replace(/:/g, '-').replace(/\..*$/, ''));
  });
});

describe('host facts under a sysroot', () => {
  it("come from the sysroot's /proc, never from this host", async () => {
    const root = copyFixture('vm-1s4c');
    const kernel = join(root, 'proc/sys/kernel');
    mkdirSync(kernel, { recursive: true });
    writeFileSync(join(kernel, 'hostname'), 'fixture-node\n');
    writeFileSync(join(kernel, 'ostype'), 'Linux\n');
    writeFileSync(join(kernel, 'osrelease'), '9.9.9-fixture\n');
    const memKb = Number(/^MemTotal:\s*(\d+)/m.exec(readFileSync(join(root, 'proc/meminfo'), 'utf8'))![1]);
    // The fixture's CPUs are busy a quarter of the time while the app runs, so there is a CPU
    // utilisation to estimate power from.
    const app = join(tempDir(), 'app.mjs');
    writeFileSync(
      app,
      `${tickerSource(paddedStat(root), 1, 3)}\nstartTicking(10);\nsetTimeout(stopTicking, 300);\n`,
    );
    const { r, report } = await monitorJson(['--sampling-period', '0.05'], [process.execPath, app], {
      JOULEGATE_SYSROOT: root,
    });
    assert.equal(report.host, 'fixture-node');
    assert.equal(report.metadata.hostname, 'fixture-node');
    assert.equal(report.metadata.kernel, '9.9.9-fixture');
    assert.equal(report.metadata.platform, 'Linux 9.9.9-fixture');
    assert.equal(report.metadata.total_ram_byte, String(memKb * 1024));
    assert.equal(report.metadata.processor, 'Intel Xeon Processor (Skylake, IBRS)');
    assert.equal(report.metadata.core_count, '4');
    assert.match(r.stdout, /^Host: fixture-node \(Intel Xeon Processor \(Skylake, IBRS\), 4 CPUs\)$/m);
    // The estimate is of the sysroot's CPUs too.
    assert.match(r.stdout, /× 4\/48 threads of "Intel Xeon Processor \(Skylake, IBRS\)"/);

    const meta = await runCli(['metadata'], { env: { JOULEGATE_SYSROOT: root } });
    assert.equal(meta.code, 0, meta.stderr);
    assert.deepEqual(Object.keys(JSON.parse(meta.stdout)), ['fixture-node']);

    // Facts the sysroot lacks are unknown, not this host's.
    rmSync(kernel, { recursive: true });
    rmSync(join(root, 'proc/meminfo'));
    const bare = (await monitorJson([], ['true'], { JOULEGATE_SYSROOT: root })).report;
    assert.equal(bare.host, 'unknown');
    assert.notEqual(bare.host, hostname());
    assert.equal(bare.metadata.kernel, 'unknown');
    assert.equal(bare.metadata.total_ram_byte, 'unknown');
  });
});
