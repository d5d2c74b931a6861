import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after } from 'node:test';
import { busConfig, TEST_BUS_POLICY } from './bus-config.js';
import { tempDir } from './tmp.js';

export { TEST_BUS_POLICY };

/**
 * A private system-like bus started by the test with its own config — never the machine's
 * system bus. The policy mirrors packaging/: only root may own names, anyone may call.
 */
export interface PrivateBus {
  address: string;
  dir: string;
  process: ChildProcess;
  stop(): void;
}

export interface BusOptions {
  /** The one authentication mechanism the bus accepts (default EXTERNAL). */
  auth?: string;
  /** Listen address (default a unix:path= socket in the bus's temp dir). */
  listen?: string;
}

/** Starts a bus with `policy` (the busconfig elements after listen/auth). */
export async function startPrivateBus(
  policy: string = TEST_BUS_POLICY,
  { auth = 'EXTERNAL', listen }: BusOptions = {},
): Promise<PrivateBus> {
  const dir = tempDir('joulegate-bus-');
  chmodSync(dir, 0o755); // other test users must reach the socket
  const socket = join(dir, 'system_bus_socket');
  const config = join(dir, 'bus.conf');
  writeFileSync(config, busConfig(listen ?? `unix:path=${socket}`, policy, auth));
  const proc = spawn(
    'dbus-daemon',
    ['--config-file', config, '--nofork', '--nopidfile', '--print-address=1'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const address = await new Promise<string>((resolve, reject) => {
    let buf = '';
    proc.stdout!.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(buf.slice(0, nl).trim());
    });
    proc.on('error', reject);
    proc.on('exit', (code) => reject(new Error(`dbus-daemon exited with ${code}`)));
  });
  const stop = () => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
  };
  after(stop);
  return { address, dir, process: proc, stop };
}
