import type { PlatformIO } from '../platform/platform-io.js';
import { hasCapSysAdmin } from '../platform/process.js';
import { loadPlatform } from './load.js';

export interface OpenPlatformOptions {
  /** Where the one-line warning goes when the daemon cannot be reached (default: stderr). */
  warn?: (line: string) => void;
}

/**
 * The one place every CLI command gets its PlatformIO from. A caller with CAP_SYS_ADMIN in its
 * effective set (GEOPM's rule, not uid 0) reads the hardware directly. Anyone else gets the
 * local backends plus SERVICE: the names joulegated allows this user, through D-Bus and the
 * batch server. SERVICE is registered last, so it serves the names the daemon grants even where
 * a local backend lists the same name but cannot read it without privileges (RAPL energy files
 * are root-only); everything else stays local.
 */
export async function openPlatform(options: OpenPlatformOptions = {}): Promise<PlatformIO> {
  if (hasCapSysAdmin(process.pid)) return loadPlatform();
  // Loaded only here: the D-Bus and batch client cost start-up time that admins never need.
  const { ServiceBackend } = await import('./service/index.js');
  const pio = await loadPlatform({ extra: [new ServiceBackend()] });
  const missing = pio.diagnostics().find((d) => d.backend === 'SERVICE' && d.signal === undefined);
  if (missing) {
    const warn = options.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
    warn(
      `Warning: <joulegate>: the joulegate daemon is not reachable (${missing.reason}); ` +
        'only signals this user can read locally are available',
    );
  }
  return pio;
}
