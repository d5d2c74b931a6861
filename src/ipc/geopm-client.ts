import { ErrorCode, InvalidArgumentError, JoulegateError } from '../platform/errors.js';
import type { BatchRequest } from './batch/protocol.js';
import {
  type CallOptions,
  DBusConnection,
  DBusRemoteError,
  DBusTimeoutError,
  defaultCallTimeoutMs,
  systemBusAddress,
} from './dbus/connection.js';
import {
  busName,
  ERROR_NAMES,
  INTERFACE_NAME,
  inSignature,
  type MethodName,
  OBJECT_PATH,
} from './dbus/interface.js';
import type { WireValue } from './dbus/wire.js';

/** A D-Bus error reply from the daemon, as a JoulegateError carrying the D-Bus error name. */
export class ServiceError extends JoulegateError {
  constructor(
    readonly dbusName: string,
    message: string,
  ) {
    super(message, codeOf(dbusName));
    this.name = 'ServiceError';
  }
}

function codeOf(dbusName: string): ErrorCode {
  switch (dbusName) {
    case ERROR_NAMES.InvalidArgument:
    case 'org.freedesktop.DBus.Error.InvalidArgs':
      return ErrorCode.Invalid;
    case ERROR_NAMES.PermissionDenied:
    case 'org.freedesktop.DBus.Error.AccessDenied':
      return ErrorCode.Permission;
    default:
      return ErrorCode.Runtime;
  }
}

export interface AccessPair {
  signals: string[];
  controls: string[];
}

export interface RemoteSignalInfo {
  name: string;
  description: string;
  domain: number;
  aggregation: number;
  format: number;
  behavior: number;
}

export interface RemoteControlInfo {
  name: string;
  description: string;
  domain: number;
}

/** One (domain_type, domain_idx, name) request of PlatformStartBatch. */
export type { BatchRequest };

export interface ClientOptions {
  /** D-Bus address; default DBUS_SYSTEM_BUS_ADDRESS or the system bus. */
  address?: string;
  /** Bus name of the daemon; default JOULEGATE_BUS_NAME or io.github.geopm. */
  busName?: string;
  /** How long each call waits for the daemon's reply; default JOULEGATE_DBUS_TIMEOUT_MS or 25 s. */
  timeoutMs?: number;
}

function toPair(v: WireValue | undefined): AccessPair {
  const [signals, controls] = v as [string[], string[]];
  return { signals, controls };
}

/**
 * Typed client of the io.github.geopm service (joulegated or GEOPM's geopmd): one async method
 * per D-Bus method. Failures reject with ServiceError (the daemon's message and error name); a
 * call the daemon does not answer in time rejects with one line naming the method and the bus.
 */
export class GeopmClient {
  private constructor(
    readonly connection: DBusConnection,
    readonly destination: string,
  ) {}

  static async connect(options: ClientOptions = {}): Promise<GeopmClient> {
    let callTimeoutMs: number;
    try {
      callTimeoutMs = options.timeoutMs ?? defaultCallTimeoutMs();
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message); // a setting to fix, not a bus problem
    }
    let conn: DBusConnection;
    try {
      conn = await DBusConnection.connect(options.address ?? systemBusAddress(), { callTimeoutMs });
    } catch (err) {
      throw new JoulegateError((err as Error).message); // names the bus address
    }
    return new GeopmClient(conn, options.busName ?? busName());
  }

  close(): void {
    this.connection.close();
  }

  /** Raw call of any member on any interface of the daemon object (tests, fuzzing). */
  async raw(opts: Omit<CallOptions, 'destination' | 'path'> & { path?: string }): Promise<WireValue[]> {
    try {
      return await this.connection.call({ destination: this.destination, path: OBJECT_PATH, ...opts });
    } catch (err) {
      if (err instanceof DBusRemoteError) throw new ServiceError(err.dbusName, err.message);
      if (err instanceof DBusTimeoutError) throw new JoulegateError(err.message);
      throw err;
    }
  }

  private async invoke(method: MethodName, ...args: WireValue[]): Promise<WireValue[]> {
    return this.raw({
      interface: INTERFACE_NAME,
      member: method,
      signature: inSignature(method),
      body: args,
    });
  }

  /** org.freedesktop.DBus.Peer.Ping to the daemon (round-trip baseline). */
  async ping(): Promise<void> {
    await this.raw({ interface: 'org.freedesktop.DBus.Peer', member: 'Ping' });
  }

  async introspect(path: string = OBJECT_PATH): Promise<string> {
    const [xml] = await this.raw({
      path,
      interface: 'org.freedesktop.DBus.Introspectable',
      member: 'Introspect',
    });
    return xml as string;
  }

  async topoGetCache(): Promise<string> {
    return (await this.invoke('TopoGetCache'))[0] as string;
  }

  async platformGetGroupAccess(group: string): Promise<AccessPair> {
    return toPair((await this.invoke('PlatformGetGroupAccess', group))[0]);
  }

  async platformSetGroupAccess(group: string, signals: string[], controls: string[]): Promise<void> {
    await this.invoke('PlatformSetGroupAccess', group, signals, controls);
  }

  async platformSetGroupAccessSignals(group: string, signals: string[]): Promise<void> {
    await this.invoke('PlatformSetGroupAccessSignals', group, signals);
  }

  async platformSetGroupAccessControls(group: string, controls: string[]): Promise<void> {
    await this.invoke('PlatformSetGroupAccessControls', group, controls);
  }

  async platformGetUserAccess(): Promise<AccessPair> {
    return toPair((await this.invoke('PlatformGetUserAccess'))[0]);
  }

  async platformGetAllAccess(): Promise<AccessPair> {
    return toPair((await this.invoke('PlatformGetAllAccess'))[0]);
  }

  async platformGetSignalInfo(names: string[]): Promise<RemoteSignalInfo[]> {
    const [rows] = await this.invoke('PlatformGetSignalInfo', names);
    return (rows as [string, string, number, number, number, number][]).map(
      ([name, description, domain, aggregation, format, behavior]) => ({
        name,
        description,
        domain,
        aggregation,
        format,
        behavior,
      }),
    );
  }

  async platformGetControlInfo(names: string[]): Promise<RemoteControlInfo[]> {
    const [rows] = await this.invoke('PlatformGetControlInfo', names);
    return (rows as [string, string, number][]).map(([name, description, domain]) => ({
      name,
      description,
      domain,
    }));
  }

  async platformLockControl(): Promise<void> {
    await this.invoke('PlatformLockControl');
  }

  async platformUnlockControl(): Promise<void> {
    await this.invoke('PlatformUnlockControl');
  }

  async platformOpenSession(): Promise<void> {
    await this.invoke('PlatformOpenSession');
  }

  async platformCloseSession(): Promise<void> {
    await this.invoke('PlatformCloseSession');
  }

  async platformCloseSessionAdmin(clientPid: number): Promise<void> {
    await this.invoke('PlatformCloseSessionAdmin', clientPid);
  }

  async platformStartBatch(
    signals: BatchRequest[],
    controls: BatchRequest[],
  ): Promise<{ serverPid: number; serverKey: string }> {
    const tuple = (r: BatchRequest): WireValue[] => [r.domain, r.idx, r.name];
    const [result] = await this.invoke('PlatformStartBatch', signals.map(tuple), controls.map(tuple));
    const [serverPid, serverKey] = result as [number, string];
    return { serverPid, serverKey };
  }

  async platformStopBatch(serverPid: number): Promise<void> {
    await this.invoke('PlatformStopBatch', serverPid);
  }

  async platformReadSignal(name: string, domain: number, idx: number): Promise<number> {
    return (await this.invoke('PlatformReadSignal', name, domain, idx))[0] as number;
  }

  async platformWriteControl(name: string, domain: number, idx: number, setting: number): Promise<void> {
    await this.invoke('PlatformWriteControl', name, domain, idx, setting);
  }

  async platformRestoreControl(): Promise<void> {
    await this.invoke('PlatformRestoreControl');
  }

  async platformStartProfile(profileName: string): Promise<void> {
    await this.invoke('PlatformStartProfile', profileName);
  }

  async platformStopProfile(regionNames: string[]): Promise<void> {
    await this.invoke('PlatformStopProfile', regionNames);
  }

  async platformGetProfilePids(profileName: string): Promise<number[]> {
    return (await this.invoke('PlatformGetProfilePids', profileName))[0] as number[];
  }

  async platformPopProfileRegionNames(profileName: string): Promise<string[]> {
    return (await this.invoke('PlatformPopProfileRegionNames', profileName))[0] as string[];
  }
}
