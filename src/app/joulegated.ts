#!/usr/bin/env node
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadPlatform } from '../backends/load.js';
import { loadPlugins } from '../backends/plugins.js';
import { DBusConnection, systemBusAddress } from '../ipc/dbus/connection.js';
import { busName, OBJECT_PATH } from '../ipc/dbus/interface.js';
import { errorMessage } from '../platform/errors.js';
import { collectWhenGrown } from '../platform/heap.js';
import { AccessLists } from '../service/access/index.js';
import { BatchServerLauncher } from '../service/batch-launcher.js';
import { batchSettingsFromEnv } from '../service/batch-settings.js';
import { Dispatcher } from '../service/dispatcher.js';
import { lockRunDir, removeCrashDebris } from '../service/run-dir.js';
import { type Log, secureMakeDirs, secureMakeFile } from '../service/secure-files.js';
import { GeopmService } from '../service/service.js';

/** GEOPM's run directory mode: clients reach files they own without listing the directory. */
const RUN_DIR_MODE = 0o711;
const TOPO_CACHE = 'geopm-topo-cache';
/** Heap growth (bytes) past which the daemon collects garbage (bench/flood.ts). */
const GARBAGE_COLLECTED_ABOVE = 4 * 1024 * 1024;

const log: Log = (line) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const started = performance.now();
  const runDir = process.env.JOULEGATE_RUN_PATH || '/run/geopm';
  const batch = batchSettingsFromEnv();
  secureMakeDirs(runDir, RUN_DIR_MODE, { log });
  // Before anything in the run dir is read or changed: one daemon per run dir.
  const taken = lockRunDir(runDir);
  if (taken) {
    log(`joulegated: ${taken}; exiting`);
    process.exit(1);
  }
  removeCrashDebris(runDir, log);

  const plugins = await loadPlugins(undefined, log);
  const pio = await loadPlatform({ extra: plugins.backends });
  for (const d of pio.diagnostics())
    if (!d.signal) log(`joulegated: backend ${d.backend} not loaded: ${d.reason}`);

  const access = new AccessLists({ log });
  const launcher = new BatchServerLauncher({
    log,
    idleTimeoutMs: batch.idleTimeoutMs,
    spares: batch.spares,
    limits: {
      perUser: batch.perUser,
      total: batch.total,
      startsAtOnce: batch.startsAtOnce,
      startTimeoutMs: batch.startTimeoutMs,
    },
  });
  const service = new GeopmService({ runDir, pio, access, log, batch: launcher });
  // A cache from an earlier boot or hardware change must not outlive the daemon that wrote it.
  rmSync(join(runDir, TOPO_CACHE), { force: true });
  secureMakeFile(join(runDir, TOPO_CACHE), service.topologyCache());
  await service.start();
  launcher.warm(); // after start(), which ends batch servers an earlier daemon left
  // A flood of calls at the caps leaves megabytes of garbage per call: collected within 0.5 s.
  collectWhenGrown(GARBAGE_COLLECTED_ABOVE, 500);

  const address = systemBusAddress();
  const conn = await DBusConnection.connect(address);
  new Dispatcher(conn, service);
  const name = busName();
  await conn.requestName(name);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`joulegated: ${signal} received: restoring controls and closing sessions`);
    try {
      await service.shutdown();
    } catch (err) {
      log(`joulegated: error while stopping: ${errorMessage(err)}`);
    }
    conn.close();
    await pio.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  conn.onClose((err) => {
    if (stopping) return;
    log(`joulegated: lost the bus connection (${err ? errorMessage(err) : 'closed'}); exiting`);
    process.exit(1);
  });

  const ms = performance.now() - started;
  log(
    `joulegated: ready: ${name} at ${OBJECT_PATH} on ${address}; ${pio.loadedBackends().length} backends, ` +
      `${pio.signalNames().length} signals, ${pio.controlNames().length} controls; run dir ${runDir}; ` +
      `startup ${ms.toFixed(0)} ms`,
  );
}

process.on('unhandledRejection', (err) => log(`joulegated: internal error: ${errorMessage(err)}`));

main().catch((err) => {
  log(`joulegated: ${errorMessage(err)}`);
  process.exit(1);
});
