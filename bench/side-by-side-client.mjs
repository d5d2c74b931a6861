// The batch client of bench/geopm-side-by-side.ts, the same code against either daemon: it runs
// inside the daemon's mount namespace (its /run/geopm) with DBUS_SYSTEM_BUS_ADDRESS set. Opens a
// session, prints {"ready":<pid>}, then for each line "starts N PAUSE_MS" on stdin makes N rounds
// of: a PAUSE_MS pause, PlatformStartBatch([TIME]) (timed: "start"), then as GEOPM's own client
// ends a batch (timed: "stop"): connect to the server, one read, "q" to the server,
// PlatformStopBatch; then an untimed wait until the server's buffer is gone (a start for the same
// client, the same key, fails while it is there). Prints {"start":[ms...],"stop":[ms...],
// "stopRefused":K,"startFailed":[message...]} (K StopBatch calls answered with an error, timed
// all the same; a StartBatch answered with an error is not timed, and its round ends there), or
// {"error":"..."}. Ends when stdin ends.
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { BatchClient } from '../dist/ipc/batch/client.js';
import { GeopmClient } from '../dist/ipc/geopm-client.js';

const RUN_DIR = '/run/geopm';
const TIME = [{ name: 'TIME', domain: 0, idx: 0 }];
const print = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const client = await GeopmClient.connect();
await client.platformOpenSession();
print({ ready: process.pid });

async function gone(key) {
  const file = `${RUN_DIR}/batch-buffer-${key}-signal`;
  for (const end = Date.now() + 2000; existsSync(file) && Date.now() < end; ) await pause(1);
}

async function starts(count, pauseMs) {
  const out = { start: [], stop: [], stopRefused: 0, startFailed: [] };
  for (let i = 0; i < count; i++) {
    if (pauseMs > 0) await pause(pauseMs);
    let t = performance.now();
    let started;
    try {
      started = await client.platformStartBatch(TIME, []);
    } catch (err) {
      // GEOPM's server start gives up on a client it finds slow (seen under load): counted, not timed.
      out.startFailed.push(String(err?.message ?? err).split('\n', 1)[0]);
      continue;
    }
    const { serverPid, serverKey } = started;
    out.start.push(performance.now() - t);
    t = performance.now();
    const batch = BatchClient.connect({ runDir: RUN_DIR, key: serverKey, numSignals: 1, numControls: 0 });
    batch.readBatch();
    batch.close();
    await client.platformStopBatch(serverPid).catch(() => {
      out.stopRefused++;
    });
    out.stop.push(performance.now() - t);
    await gone(serverKey);
  }
  return out;
}

for await (const line of createInterface({ input: process.stdin })) {
  const [what, count, pauseMs] = line.split(' ');
  try {
    if (what === 'starts') print(await starts(Number(count), Number(pauseMs)));
    else print({ error: `unknown command ${line}` });
  } catch (err) {
    print({ error: String(err?.message ?? err) });
  }
}
await client.platformCloseSession();
client.close();
