import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, RaplCounterFile } from './exporter.js';
import { tempDir } from './tmp.js';

/*
 * A real Prometheus (Debian's) scraping the test's exporters, and fixture nodes whose RAPL
 * counters advance at scripted constant power, so a test knows the true energy of any window.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fixture node's counters, advanced from a timer at the scripted power (energy at time t is exact). */
export class ScriptedNode {
  private readonly zones: { file: RaplCounterFile; watts: number; startUj: bigint }[];
  private readonly t0 = Date.now() / 1000;
  private timer?: NodeJS.Timeout;

  /** `zones`: powercap zone directory names under `root`, each with its watts and first value. */
  constructor(
    readonly root: string,
    zones: readonly { zone: string; watts: number; startUj: bigint }[],
  ) {
    this.zones = zones.map(({ zone, watts, startUj }) => ({
      file: new RaplCounterFile(root, zone),
      watts,
      startUj,
    }));
    this.write();
  }

  /** Σ watts of the zones. */
  get watts(): number {
    return this.zones.reduce((a, z) => a + z.watts, 0);
  }

  private write(): void {
    const dt = Date.now() / 1000 - this.t0;
    for (const z of this.zones) z.file.set(z.startUj + BigInt(Math.round(z.watts * dt * 1e6)));
  }

  run(): void {
    this.timer = setInterval(() => this.write(), 20);
  }

  stop(): void {
    clearInterval(this.timer);
    for (const z of this.zones) z.file.close();
  }
}

export interface RunningPrometheus {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `ports` on 127.0.0.1 every `scrapeS` and waits until it is ready. */
export async function startPrometheus(ports: readonly number[], scrapeS = 1): Promise<RunningPrometheus> {
  const dir = tempDir('joulegate-prometheus-');
  const port = await freePort();
  const config = [
    'global:',
    `  scrape_interval: ${scrapeS}s`,
    `  scrape_timeout: ${scrapeS * 800}ms`,
    'scrape_configs:',
    '  - job_name: joulegate',
    '    static_configs:',
    ...ports.map((p) => `      - targets: ['127.0.0.1:${p}']`),
    '',
  ].join('\n');
  writeFileSync(join(dir, 'prometheus.yml'), config);
  const child = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (d) => {
    log += d;
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${url}/-/ready`)).ok) return { url, child, stop };
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  await stop();
  throw new Error(`prometheus did not become ready:\n${log}`);
}

/** Samples Prometheus holds of `up` for a target over the last `seconds`. */
export async function scrapesOf(prometheus: string, port: number, seconds: number): Promise<number[]> {
  const q = encodeURIComponent(`up{instance="127.0.0.1:${port}"}[${seconds}s]`);
  const body = (await (await fetch(`${prometheus}/api/v1/query?query=${q}`)).json()) as {
    data: { result: { values: [number, string][] }[] };
  };
  return (body.data.result[0]?.values ?? []).map(([, v]) => Number(v));
}

/** Waits until Prometheus holds at least `n` successful scrapes of every port (bounded: 60 s). */
export async function untilScraped(prometheus: string, ports: readonly number[], n = 3): Promise<void> {
  for (let i = 0; ; i++) {
    const counts = await Promise.all(ports.map((p) => scrapesOf(prometheus, p, 60)));
    if (counts.every((c) => c.filter((v) => v === 1).length >= n)) return;
    if (i >= 300) throw new Error(`fewer than ${n} scrapes per target in 60 s: ${JSON.stringify(counts)}`);
    await sleep(200);
  }
}
