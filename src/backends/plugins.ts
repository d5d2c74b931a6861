import { readdirSync, realpathSync, type Stats, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Aggregation } from '../platform/aggregation.js';
import type { Backend } from '../platform/backend.js';
import { DomainType } from '../platform/domains.js';
import { importModule } from '../platform/dynamic-import.js';
import {
  errorMessage,
  InvalidArgumentError,
  JoulegateError,
  ParseError,
  PermissionError,
} from '../platform/errors.js';
import { FormatType } from '../platform/format.js';
import { Behavior, Units } from '../platform/signal-info.js';
import { TableBackend } from '../platform/table-backend.js';
import { BackendUnavailableError } from './registry.js';

/**
 * Backends from ES modules outside the package (site-specific hardware, test doubles).
 * Contract (docs/plugins.md): the module's default export is a function that receives
 * PLUGIN_API and returns a Backend, an array of them, or a promise of either. The api object
 * carries everything a plugin needs, so a plugin never imports a path inside joulegate.
 *
 * A root daemon that imports code runs it as root, so a plugin is only loaded when nobody but
 * root or the loading process's user could have written it: the file, its directory and every
 * directory above (unless sticky, like /tmp) must be owned by root or that user and not be
 * group- or world-writable. The daemon, its batch servers and every CLI command apply the same
 * rule.
 */

export const PLUGIN_API_VERSION = 1;

export const PLUGIN_API = Object.freeze({
  version: PLUGIN_API_VERSION,
  TableBackend,
  DomainType,
  Aggregation,
  FormatType,
  Behavior,
  Units,
  errors: Object.freeze({
    JoulegateError,
    InvalidArgumentError,
    PermissionError,
    ParseError,
    BackendUnavailableError,
  }),
});

export type PluginApi = typeof PLUGIN_API;
export type PluginFactory = (api: PluginApi) => Backend | Backend[] | Promise<Backend | Backend[]>;

export interface RefusedPlugin {
  path: string;
  reason: string;
}

export interface LoadedPlugins {
  backends: Backend[];
  refused: RefusedPlugin[];
}

const PLUGIN_EXTENSIONS = ['.mjs', '.js'];

/** Entries of JOULEGATE_PLUGIN_PATH (colon-separated files or directories). */
export function pluginPathEntries(value: string | undefined = process.env.JOULEGATE_PLUGIN_PATH): string[] {
  return (value ?? '').split(':').filter((p) => p !== '');
}

function mode(st: Stats): string {
  return `0${(st.mode & 0o777).toString(8)}`;
}

/** Why `st` could have been changed by someone other than root or this process's user. */
function writableByOthers(st: Stats, allowSticky: boolean): string | undefined {
  const uid = process.getuid?.() ?? 0;
  if (st.uid !== 0 && st.uid !== uid)
    return `is owned by uid ${st.uid}, not root or the loading user (uid ${uid})`;
  if ((st.mode & 0o022) === 0) return undefined;
  // Others may create entries in a sticky directory but not replace root's.
  if (allowSticky && st.isDirectory() && (st.mode & 0o1000) !== 0) return undefined;
  return `is ${(st.mode & 0o002) !== 0 ? 'world' : 'group'}-writable (mode ${mode(st)})`;
}

/**
 * Problem with trusting the code at `real` (an absolute path without symlinks), or undefined.
 * The file and its own directory must be strict; ancestors may be sticky (/tmp).
 */
export function pluginTrustProblem(real: string): string | undefined {
  const st = statSync(real);
  const own = writableByOthers(st, false);
  if (own) return `${real} ${own}`;
  let dir = dirname(real);
  let strict = true;
  for (;;) {
    const problem = writableByOthers(statSync(dir), !strict);
    if (problem) return `directory ${dir} ${problem}`;
    strict = false;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Plugin module files named by one path entry (a file, or the plugin files of a directory). */
function filesOf(entry: string): string[] {
  const st = statSync(entry);
  if (!st.isDirectory()) return [entry];
  return readdirSync(entry)
    .filter((n) => PLUGIN_EXTENSIONS.some((ext) => n.endsWith(ext)))
    .sort()
    .map((n) => join(entry, n));
}

function looksLikeBackend(value: unknown): value is Backend {
  const b = value as Partial<Backend> | null;
  return (
    typeof b === 'object' &&
    b !== null &&
    typeof b.name === 'string' &&
    typeof b.setup === 'function' &&
    typeof b.signalNames === 'function' &&
    typeof b.readSignal === 'function'
  );
}

async function importPlugin(real: string): Promise<Backend[]> {
  const mod = await importModule<{ default?: unknown }>(pathToFileURL(real).href);
  if (typeof mod.default !== 'function') {
    throw new Error('default export is not a function (api) => Backend | Backend[]');
  }
  const made = await (mod.default as PluginFactory)(PLUGIN_API);
  const list = Array.isArray(made) ? made : [made];
  const bad = list.findIndex((b) => !looksLikeBackend(b));
  if (bad >= 0)
    throw new Error(`factory result ${bad} is not a Backend (needs name, setup, signalNames, readSignal)`);
  return list;
}

/**
 * Loads every plugin named by `paths` (default: JOULEGATE_PLUGIN_PATH). A plugin that is not
 * trustworthy or fails to load is skipped with one log line naming the file and the reason;
 * the others still load.
 */
export async function loadPlugins(
  paths: readonly string[] = pluginPathEntries(),
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<LoadedPlugins> {
  const backends: Backend[] = [];
  const refused: RefusedPlugin[] = [];
  const refuse = (path: string, reason: string) => {
    refused.push({ path, reason });
    log(`Warning: <joulegate>: refusing plugin ${path}: ${reason}`);
  };
  for (const entry of paths) {
    let files: string[];
    try {
      // A directory's files are each checked below, including the directory they sit in.
      files = filesOf(entry);
    } catch (err) {
      refuse(entry, errorMessage(err));
      continue;
    }
    for (const file of files) {
      try {
        const real = realpathSync(file);
        const problem = pluginTrustProblem(real);
        if (problem) {
          refuse(file, problem);
          continue;
        }
        backends.push(...(await importPlugin(real)));
      } catch (err) {
        refuse(file, errorMessage(err));
      }
    }
  }
  return { backends, refused };
}
