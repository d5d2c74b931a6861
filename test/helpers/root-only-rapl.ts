import { chmodSync, cpSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ServiceHarness } from '../service/harness.js';
import { FIXTURES } from './tmp.js';
import { ensureUser, type TestUser } from './users.js';

/**
 * A real joulegated on a private bus over a node whose RAPL energy files are root-only (as on
 * Linux ≥ 5.10): a user sees package, DRAM and psys energy only through what the daemon grants.
 * The run directory's parent is opened to users, who reach batch buffers there as in /run/geopm.
 */
export async function daemonWithRootOnlyRapl(
  userName: string,
): Promise<{ h: ServiceHarness; user: TestUser }> {
  const h = new ServiceHarness();
  await h.setup();
  const powercap = join(h.sysroot, 'sys/class/powercap');
  cpSync(join(FIXTURES, 'energy/intel-2s/sys/class/powercap'), powercap, { recursive: true });
  for (const zone of readdirSync(powercap))
    if (zone !== 'intel-rapl') chmodSync(join(powercap, zone, 'energy_uj'), 0o400);
  chmodSync(h.sysroot, 0o755);
  chmodSync(dirname(h.runDir), 0o755);
  const user = ensureUser(userName);
  await h.startDaemon();
  return { h, user };
}
