import { lstatSync } from 'node:fs';
import { GeopmClient, ServiceError } from '../../ipc/geopm-client.js';
import { ErrorCode, InvalidArgumentError, JoulegateError, PermissionError } from '../../platform/errors.js';
import {
  AccessLists,
  type AccessSet,
  type Catalog,
  type SetAccessOptions,
} from '../../service/access/index.js';
import { requireAvailable } from '../../service/access/list-file.js';

export type AccessKind = 'signals' | 'controls';

/** Where `joulegate access` reads and writes lists: the running daemon, or the files (--direct). */
export interface AccessStore {
  userAccess(): Promise<AccessSet>;
  groupAccess(group: string): Promise<AccessSet>;
  allAccess(): Promise<AccessSet>;
  logAccess(): Promise<AccessSet>;
  setAccess(group: string, kind: AccessKind, names: string[], options: SetAccessOptions): Promise<void>;
  close(): void;
}

/** Group name GEOPM's daemon answers with the names requested since it started. */
export const LOG_REQUEST_GROUP = '0.LOG_REQUEST';

export const SERVICE_NOT_RUNNING =
  "The joulegate service is not running. Run with --direct, or install joulegated and run 'systemctl start joulegated'";

/** D-Bus errors that mean nobody owns the service's bus name. */
const NOT_RUNNING_ERRORS = new Set([
  'org.freedesktop.DBus.Error.ServiceUnknown',
  'org.freedesktop.DBus.Error.NameHasNoOwner',
  'org.freedesktop.DBus.Error.NoServer',
]);

/** Talks to joulegated (or GEOPM's geopmd) over D-Bus. */
export class DaemonAccessStore implements AccessStore {
  private constructor(private readonly client: GeopmClient) {}

  static async connect(): Promise<DaemonAccessStore> {
    try {
      return new DaemonAccessStore(await GeopmClient.connect());
    } catch (err) {
      if (err instanceof InvalidArgumentError) throw err; // a bad setting (JOULEGATE_DBUS_TIMEOUT_MS)
      if (process.env.JOULEGATE_DEBUG) process.stderr.write(`${(err as Error).stack}\n`);
      // No bus socket at all: the daemon cannot be running either.
      throw new JoulegateError(SERVICE_NOT_RUNNING);
    }
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ServiceError && NOT_RUNNING_ERRORS.has(err.dbusName)) {
        throw new JoulegateError(SERVICE_NOT_RUNNING);
      }
      throw err;
    }
  }

  userAccess(): Promise<AccessSet> {
    return this.call(() => this.client.platformGetUserAccess());
  }

  groupAccess(group: string): Promise<AccessSet> {
    return this.call(() => this.client.platformGetGroupAccess(group));
  }

  allAccess(): Promise<AccessSet> {
    return this.call(() => this.client.platformGetAllAccess());
  }

  logAccess(): Promise<AccessSet> {
    return this.call(() => this.client.platformGetGroupAccess(LOG_REQUEST_GROUP));
  }

  async setAccess(
    group: string,
    kind: AccessKind,
    names: string[],
    options: SetAccessOptions,
  ): Promise<void> {
    // The daemon writes what it is given (so --force works); checking names is the client's job.
    if (!options.force) requireAvailable(kind, names, (await this.allAccess())[kind]);
    if (options.dryRun) return;
    try {
      await this.call(() =>
        kind === 'signals'
          ? this.client.platformSetGroupAccessSignals(group, names)
          : this.client.platformSetGroupAccessControls(group, names),
      );
    } catch (err) {
      if (err instanceof ServiceError && err.code === ErrorCode.Permission) {
        const noun = kind === 'signals' ? 'signal' : 'control';
        throw new PermissionError(
          `Failed to set group ${noun} access list, try with sudo or as "root" user (requires CAP_SYS_ADMIN)`,
        );
      }
      throw err;
    }
  }

  close(): void {
    this.client.close();
  }
}

/** Works on the list files directly, as the daemon would (--direct; root only). */
export class DirectAccessStore implements AccessStore {
  private catalog?: Catalog;

  constructor(
    private readonly lists: AccessLists = new AccessLists(),
    /** Names this node supports; default: every backend plus JOULEGATE_PLUGIN_PATH plugins. */
    private readonly loadCatalog: () => Promise<Catalog> = nodeCatalog,
  ) {
    checkOwnConfigDir(lists.configDir);
  }

  private async names(): Promise<Catalog> {
    this.catalog ??= await this.loadCatalog();
    return this.catalog;
  }

  async userAccess(): Promise<AccessSet> {
    throw new JoulegateError('Must specify either --group or --default with --direct.');
  }

  async groupAccess(group: string): Promise<AccessSet> {
    return this.lists.getGroupAccess(group, await this.names());
  }

  async allAccess(): Promise<AccessSet> {
    return this.lists.getAllAccess(await this.names());
  }

  async logAccess(): Promise<AccessSet> {
    throw new JoulegateError(
      'The log of requested names is kept by the running service; it has no --direct form',
    );
  }

  async setAccess(
    group: string,
    kind: AccessKind,
    names: string[],
    options: SetAccessOptions,
  ): Promise<void> {
    const catalog = await this.names();
    if (kind === 'signals') this.lists.setGroupAccess(group, names, undefined, catalog, options);
    else this.lists.setGroupAccess(group, undefined, names, catalog, options);
  }

  close(): void {}
}

/**
 * The secure-file checks trust only files owned by the running user, so --direct run by
 * anyone but the config dir's owner would quarantine the admin's lists; refuse up front.
 */
function checkOwnConfigDir(configDir: string): void {
  let uid: number;
  try {
    uid = lstatSync(configDir).uid;
  } catch {
    uid = 0; // not created yet: only root may create it under /etc
  }
  const me = process.getuid?.() ?? 0;
  if (uid !== me) {
    throw new PermissionError(
      `--direct works on the access list files, which only their owner (uid ${uid}) may use: ${configDir}; try with sudo`,
    );
  }
}

/** Names of every backend that loads here, as the daemon would see them. */
async function nodeCatalog(): Promise<Catalog> {
  // Loaded on demand: reading lists through the daemon must not probe the hardware.
  const [{ loadPlatform }, { loadPlugins }] = await Promise.all([
    import('../../backends/load.js'),
    import('../../backends/plugins.js'),
  ]);
  const { backends } = await loadPlugins();
  const pio = await loadPlatform({ extra: backends });
  return { signals: pio.signalNames(), controls: pio.controlNames() };
}
