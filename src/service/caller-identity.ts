import { DBusRemoteError } from '../ipc/dbus/connection.js';
import type { WireValue } from '../ipc/dbus/wire.js';
import { JoulegateError, PermissionError } from '../platform/errors.js';
import { procHidesOthersFromSelf } from '../platform/proc-visibility.js';
import { type ProcessIdentity, processIdentity, ticksSinceBoot } from '../platform/process.js';
import { ProcessHandle } from '../platform/process-handle.js';
import { type Caller, hiddenCallerText } from './caller-access.js';

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
 * still of that uid and started no later than `connectedBy` (ticks since boot, a moment the
 * connection already existed). Otherwise the connection's process is gone and the pid names
 * another: one of another user, or one that started after the connection was made.
 *
 * The pid is pinned by a pidfd opened before the identity is read (ProcessHandle.pin). With
 * `keepHandle`, an identified caller keeps it, so that later questions about it are a status
 * read and a poll rather than a status and a stat read; whoever keeps the caller closes it.
 */
export async function callerOfConnection(
  query: BusQuery,
  uniqueName: string,
  connectedBy: number,
  keepHandle = false,
): Promise<Caller> {
  const credentials = await credentialsOf(query, uniqueName);
  const pid = entry(credentials, 'ProcessID');
  const uid = entry(credentials, 'UnixUserID');
  if (typeof pid !== 'number' || typeof uid !== 'number') {
    throw new JoulegateError(`the bus gave no process id or user id for connection ${uniqueName}`);
  }
  const pinned = pinCaller(pid);
  const opener = pinned !== undefined && pinned.facts.uid === uid && pinned.facts.startTicks <= connectedBy;
  if (!opener || !keepHandle) pinned?.handle.close();
  if (!opener) return { pid, uid, startTicks: undefined };
  const startTicks = pinned.facts.startTicks;
  return keepHandle ? { pid, uid, startTicks, handle: pinned.handle } : { pid, uid, startTicks };
}

/**
 * The caller's process pinned with its identity (ProcessHandle.pin). Where /proc refuses its
 * files (hidepid=noaccess: EPERM, not ENOENT), the refusal says why the daemon cannot see it.
 */
function pinCaller(pid: number): ReturnType<typeof ProcessHandle.pin<ProcessIdentity>> {
  try {
    return ProcessHandle.pin(pid, () => processIdentity(pid));
  } catch (err) {
    const hidden = err instanceof PermissionError ? procHidesOthersFromSelf('joulegated') : undefined;
    if (hidden === undefined) throw err;
    throw new PermissionError(hiddenCallerText(pid, hidden));
  }
}

/**
 * The bus daemon's credentials of a connection. A connection that left between its call and
 * this question is an ordinary refusal (its caller gets no reply anyway), not a fault.
 */
async function credentialsOf(query: BusQuery, uniqueName: string): Promise<WireValue> {
  try {
    return await query('GetConnectionCredentials', uniqueName);
  } catch (err) {
    if (!(err instanceof DBusRemoteError)) throw err;
    const why =
      err.dbusName === 'org.freedesktop.DBus.Error.NameHasNoOwner'
        ? 'left the bus before its caller could be identified'
        : `could not be identified: ${err.message}`;
    throw new JoulegateError(`connection ${uniqueName} ${why}`);
  }
}

/** Most callers kept with a handle (a file descriptor each); later ones are asked through /proc. */
const MAX_PINNED = 4096;

/**
 * Callers by connection (unique bus name), each looked up once: later calls on the connection
 * read nothing from the bus. An entry lives as long as its connection: the bus never reuses a
 * unique name, and `forget` drops it when the bus announces the connection gone
 * (NameOwnerChanged).
 *
 * It also keeps when each connection was first seen, in ticks since boot: when the bus
 * announced it (`connected`), or, for one made before the daemon followed announcements, when
 * it began following them (`following`). A connection cannot be older than its process, so a
 * pid whose process started after that moment names another process than the one that
 * connected.
 */
export class CallerRegistry {
  private readonly connections = new Map<string, Promise<Caller>>();
  private readonly seen = new Map<string, number>();
  /** When announcements began to arrive; undefined until then (or if following failed). */
  private followingSince: number | undefined;

  constructor(private readonly query: BusQuery) {}

  /** The daemon now hears of every new connection (its AddMatch was answered). */
  following(): void {
    this.followingSince = ticksSinceBoot();
  }

  /** The bus announced a new connection. */
  connected(uniqueName: string): void {
    this.seen.set(uniqueName, ticksSinceBoot());
  }

  callerOf(uniqueName: string): Promise<Caller> {
    let caller = this.connections.get(uniqueName);
    if (!caller) {
      // Unannounced: older than the following, or (following failed) no later than this call.
      const connectedBy = this.seen.get(uniqueName) ?? this.followingSince ?? ticksSinceBoot();
      // Handles only while announcements arrive: they are what closes them (forget).
      const keepHandle = this.followingSince !== undefined && this.connections.size < MAX_PINNED;
      const lookup = callerOfConnection(this.query, uniqueName, connectedBy, keepHandle);
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
    const caller = this.connections.get(uniqueName);
    this.connections.delete(uniqueName);
    this.seen.delete(uniqueName);
    // A call still holding the caller then asks /proc (a closed handle does).
    caller?.then(
      (c) => c.handle?.close(),
      () => undefined,
    );
  }

  /** Connections with a cached caller. */
  get size(): number {
    return this.connections.size;
  }
}
