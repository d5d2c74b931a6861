/**
 * The io.github.geopm D-Bus interface: the 23 methods with GEOPM's type signatures
 * (geopm.md §1.1). The daemon's dispatcher, the client and the introspection XML
 * (packaging/io.github.geopm.xml) are all generated from this one table.
 */
export const BUS_NAME_DEFAULT = 'io.github.geopm';
export const OBJECT_PATH = '/io/github/geopm';
export const INTERFACE_NAME = 'io.github.geopm';

export function busName(): string {
  return process.env.JOULEGATE_BUS_NAME || BUS_NAME_DEFAULT;
}

export interface Arg {
  name: string;
  type: string;
}

export interface MethodSpec {
  in: Arg[];
  out: Arg[];
  /** One line for the introspection XML and docs. */
  doc: string;
}

const a = (name: string, type: string): Arg => ({ name, type });

export const METHODS = {
  TopoGetCache: {
    in: [],
    out: [a('result', 's')],
    doc: 'Topology in GEOPM cache format (lscpu -x lines + GPU lines).',
  },
  PlatformGetGroupAccess: {
    in: [a('group', 's')],
    out: [a('result', '(asas)')],
    doc: "Allowed (signals, controls) of a Unix group; '' is the default list; '0.LOG_REQUEST' (admin) gives names used since start.",
  },
  PlatformSetGroupAccess: {
    in: [a('group', 's'), a('allowed_signals', 'as'), a('allowed_controls', 'as')],
    out: [],
    doc: 'Admin: replace both access lists of a group.',
  },
  PlatformSetGroupAccessSignals: {
    in: [a('group', 's'), a('allowed_signals', 'as')],
    out: [],
    doc: 'Admin: replace the signal list of a group.',
  },
  PlatformSetGroupAccessControls: {
    in: [a('group', 's'), a('allowed_controls', 'as')],
    out: [],
    doc: 'Admin: replace the control list of a group.',
  },
  PlatformGetUserAccess: {
    in: [],
    out: [a('result', '(asas)')],
    doc: "The caller's own (signals, controls).",
  },
  PlatformGetAllAccess: { in: [], out: [a('result', '(asas)')], doc: 'Every supported (signals, controls).' },
  PlatformGetSignalInfo: {
    in: [a('signal_names', 'as')],
    out: [a('result', 'a(ssiiii)')],
    doc: '(name, description, domain_type, aggregation, format_type, behavior) per name.',
  },
  PlatformGetControlInfo: {
    in: [a('control_names', 'as')],
    out: [a('result', 'a(ssi)')],
    doc: '(name, description, domain_type) per name.',
  },
  PlatformLockControl: {
    in: [],
    out: [],
    doc: 'Admin: no client may enter write mode until unlocked (persists).',
  },
  PlatformUnlockControl: { in: [], out: [], doc: 'Admin: lift PlatformLockControl.' },
  PlatformOpenSession: {
    in: [],
    out: [],
    doc: 'Open (or reference-count) a session for the calling process.',
  },
  PlatformCloseSession: { in: [], out: [], doc: "Drop one reference to the caller's session." },
  PlatformCloseSessionAdmin: {
    in: [a('client_pid', 'i')],
    out: [],
    doc: 'Close the session of a process regardless of its reference count (admin unless own pid).',
  },
  PlatformStartBatch: {
    in: [a('signal_config', 'a(iis)'), a('control_config', 'a(iis)')],
    out: [a('result', '(is)')],
    doc: 'Start the batch server for (domain_type, domain_idx, name) requests; returns (server_pid, server_key).',
  },
  PlatformStopBatch: { in: [a('server_pid', 'i')], out: [], doc: "Stop the session's batch server." },
  PlatformReadSignal: {
    in: [a('signal_name', 's'), a('domain', 'i'), a('domain_idx', 'i')],
    out: [a('result', 'd')],
    doc: 'Read one allowed signal.',
  },
  PlatformWriteControl: {
    in: [a('control_name', 's'), a('domain', 'i'), a('domain_idx', 'i'), a('setting', 'd')],
    out: [],
    doc: 'Write one allowed control (enters write mode).',
  },
  PlatformRestoreControl: {
    in: [],
    out: [],
    doc: 'Restore the saved controls without ending the session (write mode).',
  },
  PlatformStartProfile: {
    in: [a('profile_name', 's')],
    out: [],
    doc: 'Register the caller as a profiled process.',
  },
  PlatformStopProfile: {
    in: [a('region_names', 'as')],
    out: [],
    doc: "End the caller's profile, reporting its regions.",
  },
  PlatformGetProfilePids: {
    in: [a('profile_name', 's')],
    out: [a('result', 'ai')],
    doc: 'Admin: pids profiled under a name (takes PROFILER_LOCK).',
  },
  PlatformPopProfileRegionNames: {
    in: [a('profile_name', 's')],
    out: [a('result', 'as')],
    doc: 'Admin holding PROFILER_LOCK: region names reported for a profile, then forgotten.',
  },
} as const satisfies Record<string, MethodSpec>;

export type MethodName = keyof typeof METHODS;
export const METHOD_NAMES = Object.keys(METHODS) as MethodName[];

export function inSignature(method: MethodName): string {
  return (METHODS[method] as MethodSpec).in.map((x) => x.type).join('');
}

export function outSignature(method: MethodName): string {
  return (METHODS[method] as MethodSpec).out.map((x) => x.type).join('');
}

/**
 * D-Bus error names the daemon answers with. Clients see the name and a one-line message.
 */
export const ERROR_NAMES = {
  /** Bad argument: unknown name, bad domain or index, non-finite setting, wrong signature. */
  InvalidArgument: 'io.github.geopm.Error.InvalidArgument',
  /** Caller lacks CAP_SYS_ADMIN or the name is not in its access list. */
  PermissionDenied: 'io.github.geopm.Error.PermissionDenied',
  /** The call needs an open session and the caller has none (or its session was invalidated). */
  NoSession: 'io.github.geopm.Error.NoSession',
  /** Write mode is held by another process, or an admin locked controls. */
  WriteLocked: 'io.github.geopm.Error.WriteLocked',
  /** Anything else (hardware read/write failure, batch server failure). */
  Failed: 'io.github.geopm.Error.Failed',
} as const;

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function argLines(args: readonly Arg[], direction: 'in' | 'out'): string[] {
  return args.map((x) => `      <arg name="${x.name}" type="${x.type}" direction="${direction}"/>`);
}

/** The io.github.geopm interface element. */
export function interfaceXml(): string {
  const lines = [`  <interface name="${INTERFACE_NAME}">`];
  for (const name of METHOD_NAMES) {
    const m = METHODS[name] as MethodSpec;
    lines.push(`    <method name="${name}">`);
    lines.push(`      <!-- ${xmlEscape(m.doc)} -->`);
    lines.push(...argLines(m.in, 'in'), ...argLines(m.out, 'out'));
    lines.push('    </method>');
  }
  lines.push('  </interface>');
  return lines.join('\n');
}

const STANDARD_INTERFACES = `  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect">
      <arg name="xml_data" type="s" direction="out"/>
    </method>
  </interface>
  <interface name="org.freedesktop.DBus.Peer">
    <method name="Ping"/>
    <method name="GetMachineId">
      <arg name="machine_uuid" type="s" direction="out"/>
    </method>
  </interface>`;

const DOCTYPE =
  '<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"\n' +
  ' "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">';

/** Introspection XML of /io/github/geopm (also packaging/io.github.geopm.xml). */
export function introspectionXml(): string {
  return `${DOCTYPE}\n<node name="${OBJECT_PATH}">\n${interfaceXml()}\n${STANDARD_INTERFACES}\n</node>\n`;
}

/** Introspection of a path above the object (/, /io, /io/github): one child node. */
export function parentNodeXml(path: string): string | undefined {
  const prefix = path === '/' ? '/' : `${path}/`;
  if (!OBJECT_PATH.startsWith(prefix)) return undefined;
  const child = OBJECT_PATH.slice(prefix.length).split('/')[0]!;
  return `${DOCTYPE}\n<node>\n  <node name="${child}"/>\n${STANDARD_INTERFACES}\n</node>\n`;
}
