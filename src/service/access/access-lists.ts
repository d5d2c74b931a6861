import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError } from '../../platform/errors.js';
import {
  insecureReason,
  type Log,
  lstatOrUndefined,
  quarantine,
  SECURE_DIR_MODE,
  secureMakeDirs,
  secureMakeFile,
  secureReadFile,
  stderrLog,
} from '../secure-files.js';
import { resolveConfigDir } from './config-path.js';
import {
  checkListNames,
  formatAccessList,
  parseAccessList,
  requireAvailable,
  sortedUnique,
} from './list-file.js';
import { groupByName, groupNamesOf, userByName } from './nss.js';

/** Names this node supports: the filter applied to every list read from disk. */
export interface Catalog {
  signals: readonly string[];
  controls: readonly string[];
}

export interface AccessSet {
  signals: string[];
  controls: string[];
}

export interface SetAccessOptions {
  /** Write names even if this node does not support them (shared /etc across nodes). */
  force?: boolean;
  /** Validate only; write nothing. */
  dryRun?: boolean;
}

/** Directory of the lists everyone gets; a leading digit can never be a Linux group name. */
export const DEFAULT_ACCESS_DIR = '0.DEFAULT_ACCESS';
export const SIGNALS_FILE = 'allowed_signals';
export const CONTROLS_FILE = 'allowed_controls';

const EMPTY: AccessSet = { signals: [], controls: [] };

/**
 * The per-group allow lists under the config dir (`0.DEFAULT_ACCESS/` and `<GROUP>/`, each with
 * `allowed_signals` and `allowed_controls`). Missing lists grant nothing; lists that are not
 * the daemon's own 0600 files in 0700 directories are quarantined and grant nothing.
 */
export class AccessLists {
  readonly configDir: string;
  private readonly log: Log;

  constructor(options: { configDir?: string; log?: Log } = {}) {
    this.log = options.log ?? stderrLog;
    this.configDir = options.configDir ?? resolveConfigDir({ log: this.log });
  }

  /** Lists of one group (`''` = the default lists), filtered to `catalog`, sorted. */
  getGroupAccess(group: string | undefined, catalog: Catalog): AccessSet {
    return filterToCatalog(this.readRaw(this.groupDir(group)), catalog);
  }

  /**
   * Replaces a group's lists; `undefined` leaves that list as it is. Names are checked against
   * `catalog` unless `force`. Each file is replaced atomically.
   */
  setGroupAccess(
    group: string | undefined,
    signals: readonly string[] | undefined,
    controls: readonly string[] | undefined,
    catalog: Catalog,
    options: SetAccessOptions = {},
  ): void {
    const dir = this.groupDir(group);
    if (signals) checkListNames('signals', signals);
    if (controls) checkListNames('controls', controls);
    if (!options.force) {
      if (signals) requireAvailable('signals', signals, catalog.signals);
      if (controls) requireAvailable('controls', controls, catalog.controls);
    }
    if (options.dryRun) return;
    this.ensureConfigRoot();
    const groupPath = join(this.configDir, dir);
    secureMakeDirs(groupPath, SECURE_DIR_MODE, { log: this.log });
    if (signals) secureMakeFile(join(groupPath, SIGNALS_FILE), formatAccessList(signals));
    if (controls) secureMakeFile(join(groupPath, CONTROLS_FILE), formatAccessList(controls));
  }

  /**
   * What `userName` may use: the default lists plus the lists of every group NSS says the user
   * belongs to (LDAP/SSSD included), filtered to `catalog`, sorted.
   */
  getUserAccess(userName: string, catalog: Catalog): AccessSet {
    const user = userByName(userName);
    if (!user) throw new InvalidArgumentError(`Specified user '${userName}' does not exist.`);
    return this.getGroupsAccess(groupNamesOf(user), catalog);
  }

  /** The default lists plus those of `groups` (names NSS gave), filtered to `catalog`, sorted. */
  getGroupsAccess(groups: readonly string[], catalog: Catalog): AccessSet {
    const raw = [this.readRaw(DEFAULT_ACCESS_DIR)];
    for (const group of groups) {
      // A group whose name could not be a list directory can have no list: nothing to read.
      if (groupNameProblem(group) === undefined) raw.push(this.readRaw(group));
    }
    return filterToCatalog(
      { signals: raw.flatMap((r) => r.signals), controls: raw.flatMap((r) => r.controls) },
      catalog,
    );
  }

  /** Everything the node supports, regardless of lists. */
  getAllAccess(catalog: Catalog): AccessSet {
    return { signals: sortedUnique(catalog.signals), controls: sortedUnique(catalog.controls) };
  }

  /** Directory name of `group`'s lists; throws GEOPM's messages for a bad group. */
  groupDir(group: string | undefined): string {
    if (group === undefined || group === '') return DEFAULT_ACCESS_DIR;
    const problem = groupNameProblem(group);
    if (problem) throw new InvalidArgumentError(problem);
    if (!groupByName(group)) throw new InvalidArgumentError(`Linux group is not defined: group = "${group}"`);
    return group;
  }

  /** Raw names of one list directory, unfiltered; empty when missing or untrusted. */
  private readRaw(dir: string): AccessSet {
    if (!this.configRootReadable()) return EMPTY;
    const groupPath = join(this.configDir, dir);
    const st = lstatOrUndefined(groupPath);
    if (!st) return EMPTY;
    const reason = insecureReason(st, 'directory', SECURE_DIR_MODE);
    if (reason) {
      quarantine(groupPath, reason, this.log);
      return EMPTY;
    }
    const read = (file: string) =>
      parseAccessList(secureReadFile(join(groupPath, file), { log: this.log }) ?? '');
    return { signals: read(SIGNALS_FILE), controls: read(CONTROLS_FILE) };
  }

  /**
   * The config root also holds other admin files (MSR tables, constants), so an untrusted root
   * is not renamed on a read: its lists are ignored and the admin told why.
   */
  private configRootReadable(): boolean {
    const st = lstatOrUndefined(this.configDir);
    if (!st) return false;
    const reason = configRootProblem(st);
    if (reason) this.log(`Warning: <joulegate>: ignoring access lists: ${this.configDir} ${reason}`);
    return reason === undefined;
  }

  /** Before a write: create the root 0700, or quarantine one that others could change. */
  private ensureConfigRoot(): void {
    const st = lstatOrUndefined(this.configDir);
    if (st && configRootProblem(st) === undefined) return;
    secureMakeDirs(this.configDir, SECURE_DIR_MODE, { log: this.log });
  }
}

/**
 * GEOPM's group-name rules. A leading digit is refused so no group can collide with
 * `0.DEFAULT_ACCESS`; a `/` or dot name would escape the config directory.
 */
export function groupNameProblem(group: string): string | undefined {
  if (/^[0-9]/.test(group)) return `Linux group name cannot begin with a digit: group = "${group}"`;
  if (group.includes('/') || group === '.' || group === '..' || /[\0\n]/.test(group)) {
    return `Linux group name cannot contain "/" or be "." or "..": group = "${JSON.stringify(group).slice(1, -1)}"`;
  }
  return undefined;
}

/**
 * The root may be 0700 (as the daemon creates it) or a distribution's 0755: what matters is
 * that only the daemon's user can change it.
 */
function configRootProblem(st: Stats): string | undefined {
  if (st.isSymbolicLink()) return 'is a symbolic link';
  if (!st.isDirectory()) return 'is not a directory';
  if ((st.mode & 0o022) !== 0)
    return `is writable by group or others (mode 0${(st.mode & 0o777).toString(8)})`;
  if (st.uid !== process.getuid?.()) return `is owned by uid ${st.uid}, not the daemon's`;
  return undefined;
}

/** Every allowed control is also readable as the signal of the same name. */
function filterToCatalog(raw: AccessSet, catalog: Catalog): AccessSet {
  const signals = new Set(catalog.signals);
  const controls = new Set(catalog.controls);
  return {
    signals: sortedUnique([...raw.signals, ...raw.controls].filter((n) => signals.has(n))),
    controls: sortedUnique(raw.controls.filter((n) => controls.has(n))),
  };
}
