/**
 * Daemon memory under floods from unprivileged clients: 1 user, then N users at once, each
 * running bench/flood-client.mjs (rounds of PlatformGetSignalInfo and PlatformStartBatch with
 * the most names a call may carry, PlatformStartProfile/StopProfile with the most region names).
 * Reports the daemon's RSS before, its peak (sampled every 50 ms) and after each flood, on a
 * fresh daemon each (dist/). Run as root (it creates the users). Prints JSON.
 * Usage: node --import tsx bench/flood.ts [--rounds N] [--users N]
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../test/helpers/cli.js';
import { asUser, ensureUser, type TestUser } from '../test/helpers/users.js';
import { memoryOf } from './memory.js';
import { argValue, requireBuiltDist, startDaemon } from './shipped.js';

requireBuiltDist('flood');
const ROUNDS = argValue('--rounds', 20);
const USERS = argValue('--users', 5);
const CLIENT = new URL('./flood-client.mjs', import.meta.url).pathname;
const users = Array.from({ length: USERS + 1 }, (_, i) => ensureUser(`jg-bench-flood-${i}`));

/** Runs one flood client as `user`; resolves with what it refused, per method. */
async function floodAs(user: TestUser, address: string, tag: string, rounds = ROUNDS): Promise<unknown> {
  const env = ['env', `DBUS_SYSTEM_BUS_ADDRESS=${address}`, 'JOULEGATE_BUS_NAME=io.github.geopm'];
  const r = await run(process.execPath, [CLIENT, String(rounds), tag], {
    prefix: [...asUser(user), ...env],
    timeoutMs: 600_000,
  });
  if (r.code !== 0) throw new Error(`flood client exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function flood(userCount: number) {
  const work = mkdtempSync(join(tmpdir(), 'joulegate-bench-flood-'));
  chmodSync(work, 0o755);
  const running = await startDaemon(work);
  try {
    const pid = running.daemon.pid!;
    // One round as another user warms the code paths, so their first-use cost is not counted.
    await floodAs(users[USERS]!, running.address, 'warm', 1);
    await new Promise((r) => setTimeout(r, 500));
    const before = memoryOf(pid).rss_mb;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, memoryOf(pid).rss_mb);
    }, 50);
    const clients = await Promise.all(
      users.slice(0, userCount).map((u, i) => floodAs(u, running.address, `u${i}`)),
    );
    clearInterval(sampler);
    await new Promise((r) => setTimeout(r, 1000));
    const after = memoryOf(pid).rss_mb;
    return {
      users: userCount,
      rounds: ROUNDS,
      refused: clients,
      daemon_rss_mb: {
        before,
        peak,
        after,
        peak_growth: Number((peak - before).toFixed(1)),
        growth: Number((after - before).toFixed(1)),
      },
      target: 'growth from any one client < 40 MB (issue 22)',
    };
  } finally {
    await running.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

const one = await flood(1);
const many = await flood(USERS);
console.log(JSON.stringify({ bench: 'flood', one_user: one, users: many }, null, 2));
