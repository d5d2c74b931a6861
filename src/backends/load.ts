import type { Backend, BackendContext } from '../platform/backend.js';
import { errorMessage } from '../platform/errors.js';
import { PlatformIO } from '../platform/platform-io.js';
import { Sysroot } from '../platform/sysroot.js';
import { loadTopology, type Topology } from '../platform/topology.js';
import './all.js';
import { registeredBackends } from './registry.js';

export interface LoadOptions {
  sysroot?: Sysroot;
  topology?: Topology;
  configDir?: string;
  /** Only backends whose name matches (config include/exclude filters). */
  include?: (name: string) => boolean;
  /** Backends made elsewhere (plugins, the daemon client), registered after the built-in ones. */
  extra?: Backend[];
}

/** Default admin config dir (allow lists, MSR tables); env JOULEGATE_CONFIG_PATH overrides. */
export function defaultConfigDir(): string {
  return process.env.JOULEGATE_CONFIG_PATH ?? '/etc/geopm';
}

/**
 * Builds a PlatformIO with every registered backend that can run here. A backend that cannot
 * load is recorded with its reason and never stops the others.
 */
export async function loadPlatform(options: LoadOptions = {}): Promise<PlatformIO> {
  const sysroot = options.sysroot ?? new Sysroot();
  const topology = options.topology ?? loadTopology(sysroot);
  const ctx: BackendContext = { sysroot, topology, configDir: options.configDir ?? defaultConfigDir() };
  const pio = new PlatformIO(topology);
  for (const reg of registeredBackends()) {
    if (options.include && !options.include(reg.name)) continue;
    try {
      const backend = await reg.create(ctx);
      await backend.setup(ctx);
      pio.register(backend);
    } catch (err) {
      pio.recordMissing({ backend: reg.name, reason: errorMessage(err) });
    }
  }
  for (const backend of options.extra ?? []) {
    try {
      await backend.setup(ctx);
      pio.register(backend);
    } catch (err) {
      pio.recordMissing({ backend: backend.name, reason: errorMessage(err) });
    }
  }
  return pio;
}
