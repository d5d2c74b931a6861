import { PermissionError } from '../platform/errors.js';
import { hasCapSysAdmin } from '../platform/process.js';
import { type AccessLists, type AccessSet, type Catalog, userById } from './access/index.js';

/** Who is calling, as the bus daemon vouches for the sender's connection. */
export interface Caller {
  pid: number;
  uid: number;
}

/** What a calling process may do: admin rights, and its signal and control lists. */
export class CallerAccess {
  constructor(
    private readonly access: AccessLists,
    /** The names this node supports; lists read from disk are filtered by it. */
    readonly catalog: Catalog,
  ) {}

  isAdmin(caller: Caller): boolean {
    return hasCapSysAdmin(caller.pid);
  }

  requireAdmin(caller: Caller, method: string): void {
    if (!this.isAdmin(caller)) {
      throw new PermissionError(
        `Calling "io.github.geopm.${method}" failed, try with sudo or as "root" user (requires CAP_SYS_ADMIN)`,
      );
    }
  }

  /** Lists of a process: everything for an admin, else the default and its user's groups. */
  listsOf(caller: Caller): AccessSet {
    if (this.isAdmin(caller)) return this.access.getAllAccess(this.catalog);
    const user = userById(caller.uid);
    // A uid NSS does not know has no groups: it gets the default lists only.
    if (user === undefined) return this.access.getGroupAccess('', this.catalog);
    return this.access.getUserAccess(user.name, this.catalog);
  }
}
