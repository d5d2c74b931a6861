// The batch client of bench/geopm-side-by-side.ts, the same code against either daemon: it runs
// inside the daemon's mount namespace (its /run/geopm) with DBUS_SYSTEM_BUS_ADDRESS set. Opens a
// session, prints {"ready":<pid>}, then for each line "starts N PAUSE_MS" on stdin makes N rounds
// of: a PAUSE_MS pause, PlatformStartBatch([TIME]) (timed: "start"), then as GEOPM's own client
// ends a batch (timed: "stop"): connect to the server, one read, "q" to the server,
// PlatformStopBatch; then an untimed wait, up to 30 s, until the server's buffer is gone (a start
// for the same client, the same key, fails while it is there). Prints {"start":[ms...],
// "stop":[ms...],"stopRefused":K,"startFailed":[message...],"slowCleanups":S,"leftoversRemoved":L}
// (K StopBatch calls answered with an error, timed all the same; a StartBatch answered with an
// error is not timed, and its round ends there; S buffers that took over 2 s to go; L batch files
// under this client's pid removed after failed starts), or {"error":"..."}. Ends when stdin ends.
import { existsSync, unlinkSync } from 'node:fs';
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

/**
 * Waits, untimed, until the server's buffer is gone, for up to 30 s: under load GEOPM's server
 * once took longer than the 2 s this used to wait, and every later start for this client then
 * failed on the buffer it still held ("File exists"). True when the wait took over 2 s.
 */
async function gone(key) {
  const file = `${RUN_DIR}/batch-buffer-${key}-signal`;
  const start = Date.now();
  for (const end = start + 30_000; existsSync(file) && Date.now() < end; ) await pause(1);
  return Date.now() - start > 2000;
}

/**
 * Removes the batch files keyed by this client's pid that a server left behind, and says how
 * many: GEOPM keys a client's server by its pid, and under load one of its servers once left
 * its buffer for good, so that every later start for this client failed on it ("File exists").
 * Called after a failed start only, when no batch of this client runs.
 */
function removeLeftovers() {
  let removed = 0;
  const key = process.pid;
  for (const name of [
    `buffer-${key}-signal`,
    `buffer-${key}-control`,
    `status-${key}-in`,
    `status-${key}-out`,
  ]) {
    try {
      unlinkSync(`${RUN_DIR}/batch-${name}`);
      removed++;
    } catch {
      // not there
    }
  }
  return removed;
}

async function starts(count, pauseMs) {
  const out = { start: [], stop: [], stopRefused: 0, startFailed: [], slowCleanups: 0, leftoversRemoved: 0 };
  for (let i = 0; i < count; i++) {
    if (pauseMs > 0) await pause(pauseMs);
    let t = performance.now();
    let started;
    try {
      started = await client.platformStartBatch(TIME, []);
    } catch (err) {
      // GEOPM's server start gives up on a client it finds slow (seen under load): counted, not timed.
      out.startFailed.push(String(err?.message ?? err).split('\n', 1)[0]);
      out.leftoversRemoved += removeLeftovers();
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
    if (await gone(serverKey)) out.slowCleanups++;
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
