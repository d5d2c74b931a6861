/**
 * The io.github.geopm D-Bus interface: the 23 methods with GEOPM's argument names and type
 * signatures (docs/reference/geopm-service.md#d-bus-interface). The daemon's dispatcher and method types, the client and the
 * introspection XML (packaging/io.github.geopm.xml) are all derived from this one table.
 */
export const BUS_NAME_DEFAULT = 'io.github.geopm';
export const OBJECT_PATH = '/io/github/geopm';
export const INTERFACE_NAME = 'io.github.geopm';

export function busName(): string {
  return process.env.JOULEGATE_BUS_NAME || BUS_NAME_DEFAULT;
}

export interface Arg<T extends string = string> {
  readonly name: string;
  /** One complete D-Bus type (WireTypeOf must know it). */
  readonly type: T;
}

export interface MethodSpec {
  readonly in: readonly Arg[];
  readonly out: readonly Arg[];
  /** One line for the introspection XML and docs. */
  readonly doc: string;
}

/** Values of the basic D-Bus types as wire.ts decodes them. */
interface BasicWireTypes {
  y: number;
  b: boolean;
  n: number;
  q: number;
  i: number;
  u: number;
  x: number | bigint;
  t: number | bigint;
  d: number;
  s: string;
  o: string;
  g: string;
}

/** [value type, rest of S] for the complete type at the front of signature S, else never. */
type ParseFirst<S extends string> = S extends `a${infer Rest}`
  ? ArrayOf<ParseFirst<Rest>>
  : S extends `(${infer Rest}`
    ? ParseFields<Rest, []>
    : S extends `${infer Code extends keyof BasicWireTypes}${infer Rest}`
      ? [BasicWireTypes[Code], Rest]
      : never;
type ArrayOf<P> = P extends [infer T, infer Rest extends string] ? [T[], Rest] : never;
type ParseFields<S extends string, Fields extends unknown[]> = S extends `)${infer Rest}`
  ? Fields extends []
    ? never
    : [Fields, Rest]
  : NextField<ParseFirst<S>, Fields>;
type NextField<P, Fields extends unknown[]> = P extends [infer T, infer Rest extends string]
  ? ParseFields<Rest, [...Fields, T]>
  : never;

/**
 * TypeScript type of the value of one complete D-Bus type, as decoded from the wire:
 * 'a(iis)' → [number, number, string][], '(asas)' → [string[], string[]]. never for a
 * signature that is not exactly one type this table knows.
 */
export type WireTypeOf<S extends string> = CompleteValue<ParseFirst<S>>;
/** The value type when nothing follows it (distributes, so that never stays never). */
type CompleteValue<P> = P extends [infer T, ''] ? T : never;

/** never for a type code WireTypeOf cannot read, so that such an argument fails to compile. */
type KnownType<T extends string> = [WireTypeOf<T>] extends [never] ? never : unknown;

/** Keeps the literal type code, from which the argument's TypeScript type is derived. */
const a = <T extends string>(name: string, type: T & KnownType<T>): Arg<T> => ({ name, type });

export const METHODS = {
  TopoGetCache: {
    in: [],
    out: [a('result', 's')],
    doc: 'Topology in GEOPM cache format (lscpu -x lines + GPU lines).',
  },
  PlatformGetGroupAccess: {
    in: [a('group', 's')],
    out: [a('access_lists', '(asas)')],
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
    out: [a('access_lists', '(asas)')],
    doc: "The caller's own (signals, controls).",
  },
  PlatformGetAllAccess: {
    in: [],
    out: [a('access_lists', '(asas)')],
    doc: 'Every supported (signals, controls).',
  },
  PlatformGetSignalInfo: {
    in: [a('signal_names', 'as')],
    out: [a('info', 'a(ssiiii)')],
    doc: '(name, description, domain_type, aggregation, format_type, behavior) per name.',
  },
  PlatformGetControlInfo: {
    in: [a('control_names', 'as')],
    out: [a('info', 'a(ssi)')],
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
    out: [a('batch', '(is)')],
    doc: 'Start the batch server for (domain_type, domain_idx, name) requests; returns (server_pid, server_key).',
  },
  PlatformStopBatch: { in: [a('server_pid', 'i')], out: [], doc: "Stop the session's batch server." },
  PlatformReadSignal: {
    in: [a('signal_name', 's'), a('domain', 'i'), a('domain_idx', 'i')],
    out: [a('sample', 'd')],
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
    out: [a('pids', 'ai')],
    doc: 'Admin: pids profiled under a name (takes PROFILER_LOCK).',
  },
  PlatformPopProfileRegionNames: {
    in: [a('profile_name', 's')],
    out: [a('region_names', 'as')],
    doc: 'Admin holding PROFILER_LOCK: region names reported for a profile, then forgotten.',
  },
} as const satisfies Record<string, MethodSpec>;

export type MethodName = keyof typeof METHODS;
export const METHOD_NAMES: readonly MethodName[] = Object.keys(METHODS).filter(isMethodName);

export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(METHODS, name);
}

function specOf(method: MethodName): MethodSpec {
  return METHODS[method];
}

const signatureOf = (args: readonly Arg[]) => args.map((x) => x.type).join('');

/**
 * Each method's input and output signatures, joined once: the daemon compares and encodes them
 * on every call, and a string built per call would also be garbage per call.
 */
const SIGNATURES = new Map<MethodName, { in: string; out: string }>(
  METHOD_NAMES.map((name) => {
    const spec = specOf(name);
    return [name, { in: signatureOf(spec.in), out: signatureOf(spec.out) }];
  }),
);

export function inSignature(method: MethodName): string {
  return SIGNATURES.get(method)!.in;
}

export function outSignature(method: MethodName): string {
  return SIGNATURES.get(method)!.out;
}

type ValuesOf<Args extends readonly Arg[]> = {
  -readonly [K in keyof Args]: WireTypeOf<Args[K]['type']>;
};

/** The typed input arguments of a method, in order: PlatformReadSignal → [string, number, number]. */
export type MethodArgs<M extends MethodName> = ValuesOf<(typeof METHODS)[M]['in']>;
/** The typed output values of a method, in order: PlatformReadSignal → [number]. */
export type MethodResult<M extends MethodName> = ValuesOf<(typeof METHODS)[M]['out']>;

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
    const m = specOf(name);
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

export const PROPERTIES_INTERFACE = 'org.freedesktop.DBus.Properties';

/**
 * org.freedesktop.DBus.Properties as the D-Bus specification defines it. io.github.geopm has
 * no properties; GEOPM's object still answers this interface (GetAll gives an empty a{sv}),
 * so generic tools that ask for properties work the same against either daemon.
 */
const PROPERTIES_XML = `  <interface name="${PROPERTIES_INTERFACE}">
    <method name="Get">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="out"/>
    </method>
    <method name="GetAll">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="properties" type="a{sv}" direction="out"/>
    </method>
    <method name="Set">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="in"/>
    </method>
    <signal name="PropertiesChanged">
      <arg name="interface_name" type="s"/>
      <arg name="changed_properties" type="a{sv}"/>
      <arg name="invalidated_properties" type="as"/>
    </signal>
  </interface>`;

const DOCTYPE =
  '<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"\n' +
  ' "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">';

/** Introspection XML of /io/github/geopm (also packaging/io.github.geopm.xml). */
export function introspectionXml(): string {
  return `${DOCTYPE}\n<node name="${OBJECT_PATH}">\n${interfaceXml()}\n${PROPERTIES_XML}\n${STANDARD_INTERFACES}\n</node>\n`;
}

/** Introspection of a path above the object (/, /io, /io/github): one child node. */
export function parentNodeXml(path: string): string | undefined {
  const prefix = path === '/' ? '/' : `${path}/`;
  if (!OBJECT_PATH.startsWith(prefix)) return undefined;
  const child = OBJECT_PATH.slice(prefix.length).split('/')[0]!;
  return `${DOCTYPE}\n<node>\n  <node name="${child}"/>\n${STANDARD_INTERFACES}\n</node>\n`;
}
