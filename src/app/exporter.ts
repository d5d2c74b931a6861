/**
 * Assembly of `joulegate exporter` (docs/exporter.md): the node's PlatformIO, the sampler of its
 * metrics, per-consumer energy when asked for, and the HTTP server, then serving until SIGINT or
 * SIGTERM. The command (src/cli/commands/exporter.ts) parses the flags; this wires the parts.
 */

import { NvmlGpuUse, processUtilizationReader } from '../attribution/gpu-use.js';
import { openPlatform } from '../backends/open-platform.js';
import { ConsumerEnergy } from '../cluster/exporter/consumers.js';
import { CounterStateStore } from '../cluster/exporter/counter-state.js';
import { Exposition } from '../cluster/exporter/exposition.js';
import { METRIC_RULES, NodeSampler } from '../cluster/exporter/node-metrics.js';
import { ExporterServer } from '../cluster/exporter/server.js';
import type { ExporterSettings } from '../cluster/exporter/settings.js';
import { sourceStatus } from '../cluster/exporter/sources.js';
import { loadWebConfig } from '../cluster/exporter/web-config.js';
import { Sysroot } from '../platform/sysroot.js';

/** This boot's id, which changes at every boot; undefined where the kernel does not say. */
function bootId(): string | undefined {
  try {
    const id = new Sysroot().readText('/proc/sys/kernel/random/boot_id').trim();
    return id === '' ? undefined : id;
  } catch {
    return undefined;
  }
}

/** Serves the node's metrics with `settings` until the process is told to stop. */
export async function runExporter(settings: ExporterSettings): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const say = (line: string) => log(`joulegate exporter: ${line}`);
  // First: a refused web config stops the start before anything is opened.
  const web = settings.webConfigFile === undefined ? undefined : loadWebConfig(settings.webConfigFile);
  const pio = await openPlatform({ warn: log });
  const state =
    settings.stateDir === undefined
      ? undefined
      : new CounterStateStore(settings.stateDir, settings.node, bootId(), say);
  const sampler = new NodeSampler(pio, METRIC_RULES, state?.load());
  const sources = sourceStatus(pio);
  // Once, at start: what is missing and why, so the journal explains an empty dashboard.
  for (const s of sources) if (!s.available) say(`source ${s.source} not available: ${s.reason}`);
  if (sampler.absent.length > 0) {
    const absent = sampler.absent.map((r) => `${r.metric} (${r.signals[0]})`).join(', ');
    say(`not exported, no signal for them on this node: ${absent}`);
  }
  for (const note of sampler.notes) say(note);
  const attribute = settings.sources.length > 0 || settings.cgroups.length > 0;
  let consumers: ConsumerEnergy | undefined;
  if (attribute) {
    const gpuReader = processUtilizationReader(pio);
    consumers = new ConsumerEnergy(new Sysroot(), pio.topology, {
      gpu: gpuReader && new NvmlGpuUse(gpuReader, say),
      sources: settings.sources,
      cgroups: settings.cgroups,
      expiryS: settings.consumerExpiryS,
      maxConsumers: settings.maxConsumers,
    });
  }
  const exposition = new Exposition(sampler, settings.node, attribute, sources);
  const afterRead = state && (() => state.save(sampler.savedCounters()));
  const server = new ExporterServer({
    sampler,
    exposition,
    consumers,
    log,
    ...(afterRead ? { afterRead } : {}),
    ...(web ? { web } : {}),
  });
  const address = await server.listen(settings.host, settings.port);
  if (web) say(`web config ${web.summary}`);
  const scheme = server.tls ? 'https' : 'http';
  say(`serving ${sampler.channels.length} series of node ${settings.node} on ${scheme}://${address}/metrics`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await server.close();
  await pio.close();
}
