import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError, JoulegateError } from '../../platform/errors.js';
import {
  FileTooLargeError,
  insecureReason,
  type Log,
  lstatOrUndefined,
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
  MAX_LIST_FILE_BYTES,
  readAccessList,
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
 * Says each problem once: a warning about a subject (a path) is logged again only when its text
 * changes, or after the problem was gone for a while (clear()).
 */
class OnceLog {
  private readonly shown = new Map<string, string>();

  constructor(private readonly log: Log) {}

  warn(subject: string, text: string): void {
    if (this.shown.get(subject) === text) return;
    this.shown.set(subject, text);
    this.log(text);
  }

  clear(subject: string): void {
    this.shown.delete(subject);
  }
}

/**
 * The per-group allow lists under the config dir (`0.DEFAULT_ACCESS/` and `<GROUP>/`, each with
 * `allowed_signals` and `allowed_controls`). Missing lists grant nothing. A list file that is not
 * the daemon's own 0600 file is quarantined and grants nothing; a directory that is not the
 * daemon's own 0700 one is only ignored (a name like a group's may be anyone's directory), and
 * so is a list file over MAX_LIST_FILE_BYTES. Each such problem is logged once.
 */
export class AccessLists {
  readonly configDir: string;
  private readonly log: Log;
  private readonly warnings: OnceLog;

  constructor(options: { configDir?: string; log?: Log } = {}) {
    this.log = options.log ?? stderrLog;
    this.warnings = new OnceLog(this.log);
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
    const files = [signals, controls].map((names) => names && formatAccessList(names));
    for (const text of files) {
      if (text && Buffer.byteLength(text) > MAX_LIST_FILE_BYTES) {
        throw new InvalidArgumentError(
          `Access list too large: ${Buffer.byteLength(text)} bytes, more than the limit of ${MAX_LIST_FILE_BYTES}`,
        );
      }
    }
    if (!options.force) {
      if (signals) requireAvailable('signals', signals, catalog.signals);
      if (controls) requireAvailable('controls', controls, catalog.controls);
    }
    if (options.dryRun) return;
    this.ensureConfigRoot();
    const groupPath = join(this.configDir, dir);
    const st = lstatOrUndefined(groupPath);
    const reason = st && insecureReason(st, 'directory', SECURE_DIR_MODE);
    if (reason)
      throw new JoulegateError(`Cannot write access lists: ${groupPath} ${reason}; fix or remove it`);
    if (!st) secureMakeDirs(groupPath, SECURE_DIR_MODE, { log: this.log });
    const [signalsText, controlsText] = files;
    if (signalsText !== undefined) secureMakeFile(join(groupPath, SIGNALS_FILE), signalsText);
    if (controlsText !== undefined) secureMakeFile(join(groupPath, CONTROLS_FILE), controlsText);
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
    const reason = st && insecureReason(st, 'directory', SECURE_DIR_MODE);
    if (reason) {
      this.warnings.warn(
        groupPath,
        `Warning: <joulegate>: ignoring access lists in ${groupPath}: it ${reason}`,
      );
      return EMPTY;
    }
    this.warnings.clear(groupPath);
    if (!st) return EMPTY;
    return {
      signals: this.readList(join(groupPath, SIGNALS_FILE)),
      controls: this.readList(join(groupPath, CONTROLS_FILE)),
    };
  }

  /** The names in one list file; an untrusted file is quarantined, an oversized one ignored. */
  private readList(path: string): string[] {
    let text: string | undefined;
    try {
      text = secureReadFile(path, { log: this.log, maxBytes: MAX_LIST_FILE_BYTES });
    } catch (err) {
      if (!(err instanceof FileTooLargeError)) throw err;
      this.warnings.warn(
        path,
        `Warning: <joulegate>: ignoring ${path}: ${err.size} bytes, more than the limit of ${MAX_LIST_FILE_BYTES} for a list file`,
      );
      return [];
    }
    const { names, rejected } = readAccessList(text ?? '');
    const first = rejected[0];
    if (first) {
      const shown = JSON.stringify(first.text.length > 40 ? `${first.text.slice(0, 40)}…` : first.text);
      this.warnings.warn(
        path,
        `Warning: <joulegate>: ${path}: skipped ${rejected.length} line(s) that cannot be names (line ${first.line}: ${shown})`,
      );
    } else {
      this.warnings.clear(path);
    }
    return names;
  }

  /**
   * The config root also holds other admin files (MSR tables, constants), so an untrusted root
   * is never renamed: its lists are ignored and the admin told why.
   */
  private configRootReadable(): boolean {
    const st = lstatOrUndefined(this.configDir);
    const reason = st && configRootProblem(st);
    if (reason) {
      this.warnings.warn(
        this.configDir,
        `Warning: <joulegate>: ignoring access lists: ${this.configDir} ${reason}`,
      );
      return false;
    }
    this.warnings.clear(this.configDir);
    return st !== undefined;
  }

  /** Before a write: create a missing root 0700; refuse to write under one that others could change. */
  private ensureConfigRoot(): void {
    const st = lstatOrUndefined(this.configDir);
    const reason = st && configRootProblem(st);
    if (reason)
      throw new JoulegateError(`Cannot write access lists: ${this.configDir} ${reason}; fix or remove it`);
    if (!st) secureMakeDirs(this.configDir, SECURE_DIR_MODE, { log: this.log });
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
