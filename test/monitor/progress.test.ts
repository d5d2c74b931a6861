import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/monitor/log.js';
import { roundMetrics } from '../../src/monitor/metrics.js';
import type { Report } from '../../src/monitor/model/report-model.js';
import { clearingProgress, ProgressLine } from '../../src/monitor/progress.js';
import type { SampleSet } from '../../src/platform/sample-set.js';
import { CLI, run } from '../helpers/cli.js';
import { raplApp } from '../helpers/rapl-app.js';
import { needsTool } from '../helpers/requirements.js';
import { PLAIN_POST, seriesSpec } from '../helpers/series-spec.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const pty = needsTool('script');

const post = PLAIN_POST;

/** A terminal stand-in that keeps what was written. */
function screen(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

const series = seriesSpec;

describe('progress line', () => {
  const specs = [
    series('BOARD_ENERGY', 'board', 'energy'),
    series('CPU_ENERGY', 'cpu', 'energy'),
    series('DRAM_ENERGY', 'ram', 'energy'),
    series('GPU_POWER-gpu-0', 'gpu', 'power', true),
  ];
  /** 41 samples 0.125 s apart; `board` J per interval on the board counter (0 = flat psys). */
  function samples(board: number): SampleSet {
    const times = Array.from({ length: 41 }, (_, k) => k * 0.125);
    return {
      originMs: 0,
      times,
      values: [
        times.map((_, k) => 1e5 + k * board),
        times.map((_, k) => (k === 7 ? Number.NaN : 2e5 + k * 3.3)),
        times.map((_, k) => 3e5 + k * 0.7),
        times.map((_, k) => (k === 20 ? Number.NaN : 250 + (k % 3))),
      ],
    };
  }

  for (const [what, board] of [
    ['a plausible psys', 9],
    ['a flat psys', 0],
  ] as const) {
    it(`shows the report's host total, sample by sample (${what})`, () => {
      const all = samples(board);
      const { stream, text } = screen();
      const line = new ProgressLine(specs, stream as unknown as NodeJS.WriteStream);
      const live: SampleSet = { originMs: 0, times: [], values: specs.map(() => []) };
      for (let k = 0; k < all.times.length; k++) {
        live.times.push(all.times[k]!);
        live.values.forEach((v, i) => {
          v.push(all.values[i]![k]!);
        });
        line.update(live);
      }
      const report = roundMetrics(specs, all, 5, [], post);
      assert.equal(line.hostEnergy().energy, report.host.energy, 'the same number, not a close one');
      assert.equal(report.host.total?.rule, board > 0 ? 'board' : 'board-not-plausible');
      const shown = [...text().matchAll(/ ([\d.]+) kJ/g)].at(-1)![1];
      assert.equal(shown, (report.host.energy / 1000).toFixed(3));
    });
  }

  it('a log line clears the status line first, so it starts on a line of its own', () => {
    const { stream, text } = screen();
    const line = new ProgressLine(
      [series('CPU_ENERGY', 'cpu', 'energy')],
      stream as unknown as NodeJS.WriteStream,
    );
    const log = clearingProgress(
      createLogger({ level: 'WARNING', stderr: (l) => stream.write(l), now: () => new Date(0) }),
      () => line,
    );
    line.update({ originMs: 0, times: [0, 1], values: [[0, 5]] });
    log.info('dropped below the level: the line stays');
    log.warning('CPU_ENERGY-package-0: read failed (test)');
    assert.equal(
      text(),
      '\r\x1b[K[joulegate] 1.0 s  … W  0.005 kJ\r\x1b[K1970-01-01T00:00:00.000Z joulegate WARNING: CPU_ENERGY-package-0: read failed (test)\n',
    );
  });
});

describe('progress on a real terminal (script(1) gives the monitor a pty)', { skip: pty }, () => {
  it('the last status shows the report total; the end-of-run warning starts on its own line', async () => {
    const root = copyFixture('energy/amd-epyc');
    const out = tempDir();
    // 123.4 J and 234.5 J early, then a quiet second so the status catches up with the total;
    // the counter then turns to garbage, read at the final sample: an end-of-run warning.
    const rapl = raplApp(out, root, [
      { zone: 'intel-rapl:0', joules: 12.34 },
      { zone: 'intel-rapl:1', joules: 23.45 },
    ]);
    const app = join(out, 'app.sh');
    const garbage = join(root, 'sys/class/powercap/intel-rapl:1/energy_uj');
    writeFileSync(
      app,
      `#!/bin/sh\n"${process.execPath}" "${rapl}"\nsleep 1.2\necho garbage > "${garbage}"\n`,
      {
        mode: 0o755,
      },
    );
    const command = [process.execPath, CLI, 'monitor', '--sampling-period', '0.05', '--format', 'json']
      .concat(['--data-out', out, '--', app])
      .map((w) => `'${w}'`)
      .join(' ');
    const r = await run('script', ['-qefc', command, '/dev/null'], {
      env: { JOULEGATE_SYSROOT: root },
      cwd: out,
    });
    assert.equal(r.code, 0, r.stdout);
    const file = readdirSync(out).find((f) => f.endsWith('.json'))!;
    const report = JSON.parse(readFileSync(join(out, file), 'utf8'), (_k, v) =>
      v === null ? Number.NaN : v,
    ) as Report;
    const energy = report.rounds[0]!.metrics.host.energy;
    assert.ok(Math.abs(energy - 357.9) < 1e-6, `${energy} J`);
    const shown = [...r.stdout.matchAll(/\[joulegate\] [\d.]+ s {2}[^ ]+ W {2}([\d.]+) kJ/g)].map(
      (m) => m[1],
    );
    assert.ok(shown.length > 0, r.stdout);
    assert.equal(shown.at(-1), (energy / 1000).toFixed(3));
    const warning =
      /([^\n]*)\d{4}-\d\d-\d\dT[\d:.]+Z joulegate WARNING: CPU_ENERGY-package-1: read failed/.exec(r.stdout);
    assert.ok(warning, r.stdout);
    // Whatever was on the warning's line before it is a cleared status line, nothing visible.
    const before = warning[1]!;
    assert.ok(before === '' || before === '\r' || before.endsWith('\x1b[K'), JSON.stringify(before));
  });
});
