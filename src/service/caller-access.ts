import { PermissionError } from '../platform/errors.js';
import { procHidesOthersFromSelf } from '../platform/proc-visibility.js';
import { capSysAdminIn, type ProcessFacts, processExists, processFacts } from '../platform/process.js';
import type { ProcessHandle } from '../platform/process-handle.js';
import type { AccessLists, AccessSet, Catalog } from './access/index.js';
import { groupNamesOfAsync, userByIdAsync } from './access/nss.js';

/**
 * Who is calling: the process that opened the caller's bus connection, as the bus daemon
 * vouches for it (pid and uid from the socket's credentials), pinned by that process's start
 * time when the connection first called. A pid alone is not an identity: the process may
 * have exited and its pid gone to another (the connection lives on in a child it was handed to).
 */
export interface Caller {
  pid: number;
  uid: number;
  /**
   * Start time (field 22 of /proc/<pid>/stat) of the connection's process; undefined when, at
   * the first call, the pid no longer named a process of the connection's uid: nothing then
   * identifies the caller, and it may do only what needs no identity.
   */
  startTicks: number | undefined;
  /**
   * A handle on that process (set with startTicks, not always: see callerOfConnection), owned
   * by whoever made the caller. Closed, it still answers, through /proc.
   */
  readonly handle?: ProcessHandle;
}

/**
 * The caller's process as /proc shows it now, if the caller's pid still names the process that
 * opened its connection (start time and uid): asked before anything is granted on the strength
 * of that process's rights. With the caller's handle, a status read and a poll of the handle;
 * without, a status read and a stat read (processFacts).
 */
export function callerProcessNow(caller: Caller): ProcessFacts | undefined {
  if (caller.startTicks === undefined) return undefined;
  const now = caller.handle ? caller.handle.facts() : processFacts(caller.pid);
  return now !== undefined && now.startTicks === caller.startTicks && now.uid === caller.uid
    ? now
    : undefined;
}

/**
 * Why a caller's process could not be confirmed, for the refusal: it has exited, or, where /proc
 * hides other users' processes from the daemon (hidepid), it still runs unseen.
 */
export function unseenCallerText(pid: number): string {
  const hidden = processExists(pid) ? procHidesOthersFromSelf('joulegated') : undefined;
  return hidden === undefined
    ? `Process ${pid} that opened this connection has exited; a session needs a live process`
    : hiddenCallerText(pid, hidden);
}

/** The refusal of a caller that /proc hides from the daemon, `why` saying how (proc-visibility). */
export function hiddenCallerText(pid: number, why: string): string {
  return `Process ${pid} that opened this connection is hidden from joulegated: ${why}; a session needs a process joulegated can see`;
}

/** What a calling process may do: admin rights, and its signal and control lists. */
export class CallerAccess {
  constructor(
    private readonly access: AccessLists,
    /** The names this node supports; lists read from disk are filtered by it. */
    readonly catalog: Catalog,
  ) {}

  /**
   * CAP_SYS_ADMIN in the effective set of the connection's own process. The capabilities are
   * read before whatever confirms the process (its handle's poll, or its start time): if it
   * still is the caller's process afterwards, the pid named it all along (it cannot exit and
   * come back), so the capabilities were its own.
   */
  isAdmin(caller: Caller): boolean {
    const now = callerProcessNow(caller);
    return now !== undefined && capSysAdminIn(now.capEff);
  }

  requireAdmin(caller: Caller, method: string): void {
    if (!this.isAdmin(caller)) {
      throw new PermissionError(
        `Calling "io.github.geopm.${method}" failed, try with sudo or as "root" user (requires CAP_SYS_ADMIN)`,
      );
    }
  }

  /**
   * Lists of a process: everything for an admin, else the default and its user's groups. The
   * NSS lookups run off the event loop (a slow LDAP server delays this caller only).
   */
  async listsOf(caller: Caller): Promise<AccessSet> {
    if (this.isAdmin(caller)) return this.access.getAllAccess(this.catalog);
    const user = await userByIdAsync(caller.uid);
    // A uid NSS does not know has no groups: it gets the default lists only.
    if (user === undefined) return this.access.getGroupAccess('', this.catalog);
    return this.access.getGroupsAccess(await groupNamesOfAsync(user), this.catalog);
  }
}
