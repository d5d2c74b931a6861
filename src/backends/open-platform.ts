import type { Backend } from '../platform/backend.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { hasCapSysAdmin } from '../platform/process.js';
import { loadPlatform } from './load.js';
import { loadPlugins } from './plugins.js';

export interface OpenPlatformOptions {
  /** Where one-line warnings go (daemon not reachable, plugin refused); default: stderr. */
  warn?: (line: string) => void;
}

/** Diagnostic backend name of a refused plugin: listings show which file and why. */
export function refusedPluginBackend(path: string): string {
  return `plugin ${path}`;
}

/**
 * The one place every CLI command gets its PlatformIO from. Plugins named by
 * JOULEGATE_PLUGIN_PATH load with the daemon's ownership checks; a refused one is a warning
 * line and a diagnostic of the PlatformIO. A caller with CAP_SYS_ADMIN in its effective set
 * (GEOPM's rule, not uid 0) reads the hardware directly. Anyone else also gets SERVICE: the
 * names joulegated allows this user, through D-Bus and the batch server. SERVICE is registered
 * last, so it serves the names the daemon grants even where a local backend lists the same
 * name but cannot read it without privileges (RAPL energy files are root-only); everything
 * else stays local.
 */
export async function openPlatform(options: OpenPlatformOptions = {}): Promise<PlatformIO> {
  const warn = options.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
  const admin = hasCapSysAdmin(process.pid);
  let service: Backend | undefined;
  if (!admin) {
    // Loaded only here: the D-Bus and batch client cost start-up time that admins never need.
    const { ServiceBackend } = await import('./service/index.js');
    const backend = new ServiceBackend();
    // Connecting and asking the daemon begin now, while plugins and local backends load.
    backend.prepare();
    service = backend;
  }
  let pio: PlatformIO;
  try {
    const plugins = await loadPlugins(undefined, warn);
    pio = await loadPlatform({ extra: [...plugins.backends, ...(service ? [service] : [])] });
    for (const r of plugins.refused)
      pio.recordMissing({ backend: refusedPluginBackend(r.path), reason: r.reason });
  } catch (err) {
    await service?.close(); // its connection would keep the process alive
    throw err;
  }
  if (admin) return pio;
  const missing = pio.diagnostics().find((d) => d.backend === 'SERVICE' && d.signal === undefined);
  if (missing) {
    warn(
      `Warning: <joulegate>: the joulegate daemon is not reachable (${missing.reason}); ` +
        'only signals this user can read locally are available',
    );
  }
  return pio;
}

/**
 * True when this caller reached the daemon, the daemon supports `name`, and this user's access
 * list lacks it: the real reason a read or write of it failed, whatever a local backend said.
 */
export async function accessListRefuses(
  pio: PlatformIO,
  kind: 'signal' | 'control',
  name: string,
): Promise<boolean> {
  const service = pio.loadedBackends().find((b) => b.name === 'SERVICE');
  if (!service) return false;
  const { ServiceBackend } = await import('./service/index.js');
  return service instanceof ServiceBackend && (await service.refusesByAccessList(kind, name));
}
