import type { WireValue } from '../ipc/dbus/wire.js';
import { JoulegateError } from '../platform/errors.js';
import { processIdentity } from '../platform/process.js';
import type { Caller } from './caller-access.js';

/** Asks the bus daemon one question about a connection (DBusConnection.busQuery). */
export type BusQuery = (member: string, uniqueName: string) => Promise<WireValue>;

/** Value of `key` in an a{sv} dictionary as wire.ts decodes it: [key, [signature, value]] pairs. */
function entry(dict: WireValue, key: string): WireValue | undefined {
  if (!Array.isArray(dict)) return undefined;
  for (const pair of dict) {
    if (Array.isArray(pair) && pair[0] === key && Array.isArray(pair[1])) return pair[1][1];
  }
  return undefined;
}

/**
 * The caller behind a connection: pid and uid as the bus daemon took them from the socket
 * (GetConnectionCredentials), and the start time of the process that pid names now, if it is
 * still of that uid (otherwise the connection's process is gone and the pid may be another's).
 */
export async function callerOfConnection(query: BusQuery, uniqueName: string): Promise<Caller> {
  const credentials = await query('GetConnectionCredentials', uniqueName);
  const pid = entry(credentials, 'ProcessID');
  const uid = entry(credentials, 'UnixUserID');
  if (typeof pid !== 'number' || typeof uid !== 'number') {
    throw new JoulegateError(`the bus gave no process id or user id for connection ${uniqueName}`);
  }
  const process = processIdentity(pid);
  return { pid, uid, startTicks: process?.uid === uid ? process.startTicks : undefined };
}

/**
 * Callers by connection (unique bus name), each looked up once: later calls on the connection
 * read nothing. An entry lives as long as its connection: the bus never reuses a unique name,
 * and `forget` drops it when the bus announces the connection gone (NameOwnerChanged).
 */
export class CallerRegistry {
  private readonly connections = new Map<string, Promise<Caller>>();

  constructor(private readonly query: BusQuery) {}

  callerOf(uniqueName: string): Promise<Caller> {
    let caller = this.connections.get(uniqueName);
    if (!caller) {
      const lookup = callerOfConnection(this.query, uniqueName);
      this.connections.set(uniqueName, lookup);
      // A failed lookup (the connection left meanwhile) is not kept.
      lookup.catch(() => {
        if (this.connections.get(uniqueName) === lookup) this.connections.delete(uniqueName);
      });
      caller = lookup;
    }
    return caller;
  }

  forget(uniqueName: string): void {
    this.connections.delete(uniqueName);
  }

  /** Connections with a cached caller. */
  get size(): number {
    return this.connections.size;
  }
}
