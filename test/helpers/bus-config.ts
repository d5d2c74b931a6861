/**
 * The configuration of a private system-like bus, shared by the tests (helpers/dbus.ts) and the
 * benches (bench/shipped.ts). No node:test import here: benches load it outside a test run.
 */

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

/** A whole bus config: `policy` (the busconfig elements after listen/auth) on `listen`. */
export function busConfig(listen: string, policy: string = TEST_BUS_POLICY, auth = 'EXTERNAL'): string {
  return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>${listen}</listen>
  <auth>${auth}</auth>
${policy}
</busconfig>
`;
}
