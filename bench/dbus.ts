/**
 * joulegated over D-Bus: PlatformReadSignal("TIME", board, 0) latency next to a
 * org.freedesktop.DBus.Peer.Ping to the same daemon on the same bus (the floor any D-Bus method
 * pays: two hops through dbus-daemon plus JS (un)marshalling), measured interleaved in the same
 * run; plus the daemon's start-to-ready time and its resident memory.
 * Prints JSON. Usage: node --import tsx bench/dbus.ts [--calls N]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GeopmClient } from '../src/ipc/geopm-client.js';

const i = process.argv.indexOf('--calls');
const CALLS = i >= 0 ? Number(process.argv[i + 1]) : 2000;
const WARMUP = 200;
const DAEMON = new URL('../dist/app/joulegated.js', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-dbus-'));

function firstLine(proc: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    proc[stream]!.setEncoding('utf8');
    proc[stream]!.on('data', (d: string) => {
      buf += d;
      const m = buf.split('\n').find((l) => pattern.test(l));
      if (m) resolve(m);
    });
    proc.on('exit', (code) => reject(new Error(`${proc.spawnfile} exited with ${code}: ${buf}`)));
  });
}

function percentiles(samples: number[]): { p50_us: number; p99_us: number } {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(1));
  return { p50_us: at(0.5), p99_us: at(0.99) };
}

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}

const procs: ChildProcess[] = [];
try {
  // A session-type bus of our own: only our uid may connect, which is all the bench needs.
  const bus = spawn(
    'dbus-daemon',
    ['--session', '--nofork', '--print-address=1', `--address=unix:path=${join(work, 'bus')}`],
    {
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  procs.push(bus);
  const address = (await firstLine(bus, 'stdout', /^unix:/)).trim();

  const spawnedAt = performance.now();
  const daemon = spawn(process.execPath, [DAEMON], {
    env: {
      ...process.env,
      DBUS_SYSTEM_BUS_ADDRESS: address,
      JOULEGATE_BUS_NAME: 'io.github.geopm',
      JOULEGATE_RUN_PATH: join(work, 'run'),
      JOULEGATE_CONFIG_PATH: join(work, 'config'),
      JOULEGATE_PLUGIN_PATH: '',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  procs.push(daemon);
  const ready = await firstLine(daemon, 'stderr', /joulegated: ready/);
  const startToReadyMs = performance.now() - spawnedAt;
  const ownStartupMs = Number(/startup (\d+) ms/.exec(ready)?.[1]);

  const client = await GeopmClient.connect({ address });
  await client.platformOpenSession();
  for (let k = 0; k < WARMUP; k++) {
    await client.platformReadSignal('TIME', 0, 0);
    await client.ping();
  }
  const read: number[] = [];
  const ping: number[] = [];
  // Interleaved so both see the same machine load.
  for (let k = 0; k < CALLS; k++) {
    let t = performance.now();
    await client.platformReadSignal('TIME', 0, 0);
    read.push((performance.now() - t) * 1000);
    t = performance.now();
    await client.ping();
    ping.push((performance.now() - t) * 1000);
  }
  const rss = rssKiB(daemon.pid!);
  await client.platformCloseSession();
  client.close();
  const r = percentiles(read);
  const p = percentiles(ping);
  console.log(
    JSON.stringify(
      {
        bench: 'dbus',
        calls: CALLS,
        read_signal: r,
        peer_ping: p,
        ratio_p50_read_over_ping: Number((r.p50_us / p.p50_us).toFixed(2)),
        ratio_p99_read_over_ping: Number((r.p99_us / p.p99_us).toFixed(2)),
        daemon_start_to_ready_ms: Number(startToReadyMs.toFixed(0)),
        daemon_reported_startup_ms: ownStartupMs,
        daemon_rss_mib: Number((rss / 1024).toFixed(1)),
      },
      null,
      2,
    ),
  );
} finally {
  for (const p of procs.reverse()) p.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  rmSync(work, { recursive: true, force: true });
}
