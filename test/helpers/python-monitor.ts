import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../../src/monitor/model/report-model.js';
import { runCli } from './cli.js';
import { tempDir } from './tmp.js';

/**
 * `monitor --data_out X -f json --sampling_period 0.05 train.py` of a Python script `source` in a
 * new directory (`env`: the sysroot and a PATH where python3 is Debian's): its report, its calls
 * and what it printed. The report must be named after the script.
 */
export async function monitorPythonScript(source: string, env: Record<string, string | undefined>) {
  const dir = tempDir();
  writeFileSync(join(dir, 'train.py'), source);
  const r = await runCli(
    ['monitor', '--data_out', 'X', '-f', 'json', '--sampling_period', '0.05', 'train.py'],
    {
      cwd: dir,
      env,
    },
  );
  assert.equal(r.code, 0, r.stderr);
  const [file] = readdirSync(join(dir, 'X'));
  assert.match(file!, /^train_.*\.json$/, 'named after the script');
  const report = JSON.parse(readFileSync(join(dir, 'X', file!), 'utf8'), (_k, v) =>
    v === null ? Number.NaN : v,
  ) as Report;
  return { r, report, calls: report.rounds[0]!.metrics.regions };
}
