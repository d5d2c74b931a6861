import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after } from 'node:test';
import { type CaptureName, captureSysroot } from './captures.js';
import { runCli } from './cli.js';
import { type RunningExporter, scrape, startExporter } from './exporter.js';

/*
 * The commands every real capture must pass (test/cli/captures*.test.ts): run with
 * JOULEGATE_SYSROOT at the capture's unpacked tree.
 */

const running: RunningExporter[] = [];
after(async () => {
  for (const e of running) await e.stop();
});

export const sysrootEnv = (root: string) => ({ env: { JOULEGATE_SYSROOT: root } });

/** One `joulegate session` sample of the requests, as column → value (left-out notes kept). */
export async function sessionValues(root: string, requests: string[]) {
  const r = await runCli(['session'], { ...sysrootEnv(root), input: `${requests.join('\n')}\n` });
  assert.equal(r.code, 0, r.stderr);
  const [header, row] = r.stdout.trim().split('\n') as [string, string];
  const names = header.split(',').map((h) => h.replace(/"/g, ''));
  const values = row.split(',').map(Number);
  return { values: new Map(names.map((n, i) => [n, values[i]!])), stderr: r.stderr };
}

/**
 * `monitor -- sleep 1`, `sensors` and `topo` over a fresh copy of the capture all exit 0;
 * returns the copy, sensors' output and the monitor's report (each with its stderr).
 */
export async function commandsSucceed(
  name: CaptureName,
): Promise<{ root: string; sensors: string; report: string }> {
  const root = captureSysroot(name);
  const monitor = await runCli(['monitor', '--', 'sleep', '1'], sysrootEnv(root));
  assert.equal(monitor.code, 0, `monitor on ${name}: ${monitor.stderr}`);
  const sensors = await runCli(['sensors'], sysrootEnv(root));
  assert.equal(sensors.code, 0, `sensors on ${name}: ${sensors.stderr}`);
  const topo = await runCli(['topo'], sysrootEnv(root));
  assert.equal(topo.code, 0, `topo on ${name}: ${topo.stderr}`);
  return { root, sensors: sensors.stdout + sensors.stderr, report: monitor.stdout + monitor.stderr };
}

/** One exporter scrape (after a first, since rates need two readings) that promtool accepts. */
export async function scrapeChecked(root: string): Promise<{ body: string; log: string }> {
  const e = await startExporter(root, 'capture');
  running.push(e);
  await scrape(e.url);
  const { body } = await scrape(e.url);
  const check = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' });
  assert.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}\n${body}`);
  return { body, log: e.stderr() };
}
