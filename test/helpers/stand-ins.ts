import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

/*
 * Stand-ins for host tools (Slurm's scontrol …) that a test puts first on its own PATH, so a real
 * tool installed on the machine cannot change the result.
 */

/** Writes an executable `name` running the sh `script` into a fresh dir; returns that dir. */
export function standIn(name: string, script: string): string {
  const dir = tempDir(`joulegate-stand-in-${name}-`);
  writeFileSync(join(dir, name), `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return dir;
}

/** `dirs` ahead of the test's PATH. */
export function pathWith(...dirs: string[]): string {
  return [...dirs, process.env.PATH ?? '/usr/bin:/bin'].join(':');
}

/** scontrol of a node without a Slurm configuration: what Debian's slurm-client prints, status 1. */
export const SCONTROL_WITHOUT_SLURM = `cat >&2 <<'END'
scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host
scontrol: error: fetch_config: DNS SRV lookup failed
scontrol: error: _establish_config_source: failed to fetch config
scontrol: fatal: Could not establish a configuration source
END
exit 1`;
