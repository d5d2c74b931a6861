// Concurrent D-Bus clients for bench/dbus.ts: `connections` connections of this process each open
// a session; then, for each line "read" or "ping" on stdin, every connection makes `calls`
// back-to-back PlatformReadSignal("TIME", board, 0) calls (or Peer.Pings), all connections at
// once, and the process prints {"us":[...]} (each call's latency, µs). Env: DBUS_SYSTEM_BUS_ADDRESS.
import { createInterface } from 'node:readline';
import { GeopmClient } from '../dist/ipc/geopm-client.js';

const [connections, calls] = process.argv.slice(2).map(Number);
const clients = await Promise.all(Array.from({ length: connections }, () => GeopmClient.connect()));
for (const c of clients) {
  await c.platformOpenSession();
  for (let k = 0; k < 20; k++) await c.platformReadSignal('TIME', 0, 0);
}
process.stdout.write('{"ready":true}\n');
for await (const line of createInterface({ input: process.stdin })) {
  const us = [];
  await Promise.all(
    clients.map(async (c) => {
      for (let k = 0; k < calls; k++) {
        const t = performance.now();
        if (line === 'ping') await c.ping();
        else await c.platformReadSignal('TIME', 0, 0);
        us.push((performance.now() - t) * 1000);
      }
    }),
  );
  process.stdout.write(`${JSON.stringify({ us })}\n`);
}
for (const c of clients) {
  await c.platformCloseSession();
  c.close();
}
