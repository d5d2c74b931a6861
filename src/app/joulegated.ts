#!/usr/bin/env node
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadPlatform } from '../backends/load.js';
import { loadPlugins } from '../backends/plugins.js';
import { nativeLoopStatus } from '../batch/native-loop.js';
import { DBusConnection, DBusRemoteError, systemBusAddress } from '../ipc/dbus/connection.js';
import { busName, OBJECT_PATH } from '../ipc/dbus/interface.js';
import { errorMessage } from '../platform/errors.js';
import { collectWhenGrown } from '../platform/heap.js';
import { procHidesOthersFromSelf } from '../platform/proc-visibility.js';
import { VERSION } from '../platform/version.js';
import { AccessLists } from '../service/access/index.js';
import { answerModeFromEnv } from '../service/answer-mode.js';
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

/**
 * The daemon takes no flags: every setting is an environment variable (the unit reads them from
 * /etc/default/joulegated, which lists each one; test/packaging/ checks that it does).
 */
const DAEMON_VARIABLES: readonly (readonly [string, string])[] = [
  ['JOULEGATE_BUS_NAME', 'bus name to own (default io.github.geopm)'],
  ['JOULEGATE_RUN_PATH', 'sessions, write lock, saved controls, batch files (default /run/geopm)'],
  ['JOULEGATE_CONFIG_PATH', 'access lists and admin MSR tables (default /etc/geopm)'],
  ['JOULEGATE_PLUGIN_PATH', 'directories of backend plugins, colon-separated (default none)'],
  ['JOULEGATE_NVML_LIB', 'path of the NVML library (default libnvidia-ml.so.1)'],
  ['JOULEGATE_AMDSMI_LIB', 'path of the AMD SMI library (default libamd_smi.so)'],
  ['JOULEGATE_BATCH_MAX_PER_USER', 'batch servers one user may have (default 16)'],
  ['JOULEGATE_BATCH_MAX_SERVERS', 'batch servers on the node (default 64)'],
  ['JOULEGATE_BATCH_STARTS_AT_ONCE', 'batch server starts in progress at once (default 0: one per CPU)'],
  ['JOULEGATE_BATCH_START_TIMEOUT', 'seconds a batch server start may take (default 20)'],
  ['JOULEGATE_BATCH_IDLE_TIMEOUT', 'seconds a batch server waits for its client (default 10)'],
  ['JOULEGATE_BATCH_SPARES', 'batch servers kept loaded ahead of requests (default 1)'],
  ['JOULEGATE_DBUS_TIMEOUT_MS', 'milliseconds a D-Bus call waits for its reply (default 25000)'],
  ['DBUS_SYSTEM_BUS_ADDRESS', 'the system bus (default unix:path=/run/dbus/system_bus_socket)'],
  ['JOULEGATE_SYSROOT', 'prefix of hardware paths, for tests only (default none)'],
];

/** --help, --version or a flag the daemon does not take: answered here, before anything starts. */
function answerFlags(args: readonly string[]): void {
  const [first] = args;
  if (first === undefined) return;
  if (first === '--help' || first === '-h') {
    const width = Math.max(...DAEMON_VARIABLES.map(([name]) => name.length));
    process.stdout.write(
      'Usage: joulegated [--help | --version]\n\n' +
        'The joulegate node daemon (GEOPM-compatible, io.github.geopm on the system bus), started\n' +
        'by systemd (joulegated.service). It takes no flags; it reads these environment variables,\n' +
        'which the unit takes from /etc/default/joulegated:\n\n' +
        DAEMON_VARIABLES.map(([name, what]) => `  ${name.padEnd(width)}  ${what}\n`).join(''),
    );
    process.exit(0);
  }
  if (first === '--version' || first === '-V') {
    process.stdout.write(`joulegated ${VERSION}\n`);
    process.exit(0);
  }
  process.stderr.write(`joulegated: unknown argument "${first}" (see joulegated --help)\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  answerFlags(process.argv.slice(2));
  const started = performance.now();
  const runDir = process.env.JOULEGATE_RUN_PATH || '/run/geopm';
  const batch = batchSettingsFromEnv();
  const answers = answerModeFromEnv();

  const plugins = await loadPlugins(undefined, log);
  const pio = await loadPlatform({ extra: plugins.backends });

  const access = new AccessLists({ log });
  const launcher = new BatchServerLauncher({
    log,
    idleTimeoutMs: batch.idleTimeoutMs,
    spares: batch.spares,
    maxSpares: batch.maxSpares,
    clientsPerServer: batch.clientsPerServer,
    limits: {
      perUser: batch.perUser,
      total: batch.total,
      startsAtOnce: batch.startsAtOnce,
      startTimeoutMs: batch.startTimeoutMs,
    },
  });
  const service = new GeopmService({ runDir, pio, access, log, batch: launcher, answers });

  // The bus name first: a second daemon (on any run dir) stops here, having touched nothing.
  // Calls that arrive before the run dir is ready wait for it.
  const address = systemBusAddress();
  const conn = await DBusConnection.connect(address);
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  new Dispatcher(conn, service, ready);
  const name = busName();
  const owner = await claimBusName(conn, name);
  if (owner !== undefined) {
    log(`joulegated: ${name} is already owned${owner} on ${address}; exiting`);
    process.exit(1);
  }

  secureMakeDirs(runDir, RUN_DIR_MODE, { log });
  // Before anything in the run dir is read or changed: one daemon per run dir.
  const taken = lockRunDir(runDir);
  if (taken) {
    log(`joulegated: ${taken}; exiting`);
    process.exit(1);
  }
  removeCrashDebris(runDir, log);
  // Only now: a daemon that stops above says one line.
  for (const d of pio.diagnostics())
    if (!d.signal) log(`joulegated: backend ${d.backend} not loaded: ${d.reason}`);
  const hidden = procHidesOthersFromSelf('joulegated');
  if (hidden) {
    log(
      `joulegated: warning: ${hidden}: it cannot identify those callers and refuses them; give it ` +
        "CAP_SYS_PTRACE (the shipped unit does) or, unless hidepid=ptraceable, /proc's group",
    );
  }
  // A cache from an earlier boot or hardware change must not outlive the daemon that wrote it.
  rmSync(join(runDir, TOPO_CACHE), { force: true });
  secureMakeFile(join(runDir, TOPO_CACHE), service.topologyCache());
  await service.start();
  launcher.warm(); // after start(), which ends batch servers an earlier daemon left
  markReady();
  // A flood of calls at the caps leaves megabytes of garbage per call: collected within 0.5 s.
  collectWhenGrown(GARBAGE_COLLECTED_ABOVE, 500);

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
      `batch servers sample ${nativeLoopStatus()}; startup ${ms.toFixed(0)} ms`,
  );
}

/**
 * Requests `name` (without queueing). Returns undefined once the daemon owns it, else who owns
 * it, as " by pid N" (or "" if that cannot be told) for the one line the daemon exits with.
 */
async function claimBusName(conn: DBusConnection, name: string): Promise<string | undefined> {
  if (await conn.tryRequestName(name)) return undefined;
  try {
    const owner = await conn.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'GetNameOwner',
      signature: 's',
      body: [name],
    });
    const pid = await conn.busQuery('GetConnectionUnixProcessID', String(owner[0]));
    return ` by pid ${pid}`;
  } catch (err) {
    // The owner left meanwhile: still not ours, a restart will try again.
    if (err instanceof DBusRemoteError) return '';
    throw err;
  }
}

process.on('unhandledRejection', (err) => log(`joulegated: internal error: ${errorMessage(err)}`));

main().catch((err) => {
  log(`joulegated: ${errorMessage(err)}`);
  process.exit(1);
});
