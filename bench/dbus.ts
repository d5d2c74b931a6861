/**
 * joulegated over D-Bus: PlatformReadSignal("TIME", board, 0) latency next to its floor, an
 * org.freedesktop.DBus.Peer.Ping to the same daemon on the same bus (what any D-Bus method
 * pays: two hops through dbus-daemon plus JS (un)marshalling), measured interleaved in the same
 * run; plus the daemon's start-to-ready time and its resident memory. The daemon and the client
 * are the built ones (dist/).
 * Prints JSON. Usage: node --import tsx bench/dbus.ts [--calls N]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importDist, percentiles, requireBuiltDist, startDaemon } from './shipped.js';

requireBuiltDist('dbus');
const { GeopmClient } = await importDist<typeof import('../src/ipc/geopm-client.js')>('ipc/geopm-client.js');

const i = process.argv.indexOf('--calls');
const CALLS = i >= 0 ? Number(process.argv[i + 1]) : 2000;
const WARMUP = 200;
const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-dbus-'));

function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}

const running = await startDaemon(work);
try {
  const client = await GeopmClient.connect({ address: running.address });
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
  const rss = rssKiB(running.daemon.pid!);
  await client.platformCloseSession();
  client.close();
  const r = percentiles(read, 1);
  const p = percentiles(ping, 1);
  console.log(
    JSON.stringify(
      {
        bench: 'dbus',
        calls: CALLS,
        floor: { name: 'org.freedesktop.DBus.Peer.Ping to joulegated on the same bus', ...p },
        joulegate: { name: 'PlatformReadSignal("TIME", board, 0)', ...r },
        ratio_p50_vs_floor: Number((r.p50_us / p.p50_us).toFixed(2)),
        ratio_p99_vs_floor: Number((r.p99_us / p.p99_us).toFixed(2)),
        daemon_start_to_ready_ms: Number(running.startToReadyMs.toFixed(0)),
        daemon_reported_startup_ms: running.reportedStartupMs,
        daemon_rss_mib: Number((rss / 1024).toFixed(1)),
      },
      null,
      2,
    ),
  );
} finally {
  await running.stop();
  rmSync(work, { recursive: true, force: true });
}
