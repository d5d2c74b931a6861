import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after } from 'node:test';
import { tempDir } from './tmp.js';

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

/** The default policy: like a system bus with packaging/'s rules for our name. */
export const TEST_BUS_POLICY = `  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus"/>
  </policy>
  <policy user="root">
    <allow own="*"/>
  </policy>`;

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
  writeFileSync(
    config,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>${listen ?? `unix:path=${socket}`}</listen>
  <auth>${auth}</auth>
${policy}
</busconfig>
`,
  );
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
