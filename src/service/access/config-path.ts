import { existsSync } from 'node:fs';
import { type Log, stderrLog } from '../secure-files.js';

export const DEFAULT_CONFIG_PATH = '/etc/geopm';
/** Where pre-3.0 GEOPM kept its configuration; still honoured, with a warning. */
export const LEGACY_CONFIG_PATH = '/etc/geopm-service';

export interface ConfigPathOptions {
  env?: NodeJS.ProcessEnv;
  log?: Log;
  /** Overridable for tests, which must never look at the machine's /etc. */
  defaultPath?: string;
  legacyPath?: string;
}

/**
 * The admin configuration directory. JOULEGATE_CONFIG_PATH wins outright. Otherwise /etc/geopm,
 * unless only the legacy /etc/geopm-service exists: then that one is used so an upgraded node
 * keeps its access lists, and the admin is told to migrate.
 */
export function resolveConfigDir(options: ConfigPathOptions = {}): string {
  const env = options.env ?? process.env;
  const log = options.log ?? stderrLog;
  const current = options.defaultPath ?? DEFAULT_CONFIG_PATH;
  const legacy = options.legacyPath ?? LEGACY_CONFIG_PATH;
  if (env.JOULEGATE_CONFIG_PATH) return env.JOULEGATE_CONFIG_PATH;
  if (!existsSync(legacy)) return current;
  const migrate = `${legacy} is deprecated and may not be used in future releases. Migrate configuration data to the directory at ${current}`;
  if (existsSync(current)) {
    log(`Warning: <joulegate>: Detected multiple configuration directories, ignoring ${legacy}. ${migrate}`);
    return current;
  }
  log(`Warning: <joulegate>: Using an old configuration directory ${legacy}. ${migrate}`);
  return legacy;
}
