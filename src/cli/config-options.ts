import { existsSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { ConfigLayer } from '../monitor/config/load.js';
import { type Config, type ConfigFlag, configKeys } from '../monitor/config/schema.js';
import { JoulegateError } from '../platform/errors.js';

/** The settings that have a CLI flag, in the schema's order, with how each is spelled. */
const CONFIG_FLAGS: readonly [key: string, flag: ConfigFlag][] = configKeys().flatMap(([, key, spec]) =>
  spec.flag ? [[key, spec.flag] as [string, ConfigFlag]] : [],
);

/** A setting's alternative long flags: the underscore form and perun's other names. */
const aliasesOf = (key: string, flag: ConfigFlag) => [
  ...(key.includes('_') ? [key] : []),
  ...(flag.perunNames ?? []),
];

const flagOf = (key: string) => key.replace(/_/g, '-');
const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Adds `--<key-with-dashes>` for each setting, plus perun's spellings: its short flags and the
 * underscore form (`--data_out`). Commander holds at most two flags per option, so the
 * underscore form is a second option (named in the first one's help) read back by flagValue.
 */
export function addConfigOptions(cmd: Command, keys?: readonly string[]): Command {
  cmd.option(
    '-c, --config <file>',
    'project configuration file (default ./.joulegate.ini; perun: --configuration)',
  );
  cmd.addOption(new Option('--configuration <file>').hideHelp());
  for (const [key, flag] of CONFIG_FLAGS) {
    if (keys && !keys.includes(key)) continue;
    const aliases = aliasesOf(key, flag);
    const also = aliases.length > 0 ? `; also ${aliases.map((a) => `--${a}`).join(', ')}` : '';
    cmd.option(`${flag.short ? `${flag.short}, ` : ''}--${flagOf(key)} <value>`, `${flag.help}${also}`);
    for (const alias of aliases) cmd.addOption(new Option(`--${alias} <value>`).hideHelp());
  }
  return cmd;
}

/** The subcommands that read the configuration, and so perun's global options before them. */
export const CONFIG_COMMANDS: readonly string[] = ['monitor', 'showconf', 'job-report', 'sensors'];

/**
 * perun's global options, given before the subcommand (`perun -l DEBUG -c my.ini monitor …`):
 * the configuration file and the log settings, the same flags as the subcommands take.
 */
export function addGlobalConfigOptions(program: Command): Command {
  return addConfigOptions(program, ['log_lvl', 'log_file']);
}

/** Whether any of perun's global options was given to `program`. */
export const hasGlobalConfigOptions = (program: Command) =>
  Object.values(program.opts()).some((v) => v !== undefined);

/** A subcommand's options over the program's global ones: a flag given after the subcommand wins. */
export function optionsWithGlobals(cmd: Command): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const level of [cmd.parent, cmd])
    for (const [k, v] of Object.entries(level?.opts() ?? {})) if (v !== undefined) merged[k] = v;
  return merged;
}

/** A setting's flag value under any of its spellings (commander names `--data_out`'s value data_out). */
function flagValue(opts: Record<string, unknown>, key: string, flag: ConfigFlag): string | undefined {
  for (const name of [camel(key), ...aliasesOf(key, flag)])
    if (opts[name] !== undefined) return opts[name] as string;
  return undefined;
}

const LOCAL_FILE = './.joulegate.ini';
const PERUN_FILE = './.perun.ini';

/**
 * Configuration from defaults < ~/.config/joulegate.ini < project file (-c, ./.joulegate.ini,
 * or else perun's ./.perun.ini) < env (PERUN_<KEY> < JOULEGATE_<KEY>) < these flags.
 */
export async function configFromOptions(opts: Record<string, unknown>): Promise<Config> {
  // Loaded here, not at startup: the file and env layers are only for commands that use them.
  const { envLayer, fileLayers, flatLayer, perunFileLayer, resolveConfig } = await import(
    '../monitor/config/load.js'
  );
  const named = (opts.config ?? opts.configuration) as string | undefined;
  // The default file is optional; one named with -c is meant to be used.
  if (named !== undefined && !existsSync(named))
    throw new JoulegateError(`configuration file ${named} not found`);
  const files = fileLayers(named ?? LOCAL_FILE);
  // perun's users keep their project file: read when there is no joulegate one (and no -c).
  const perun = named === undefined && !existsSync(LOCAL_FILE) ? perunFileLayer(PERUN_FILE) : undefined;
  if (perun) {
    const ignored =
      perun.ignored.length > 0 ? ` (ignored, not joulegate settings: ${perun.ignored.join(', ')})` : '';
    process.stderr.write(`joulegate: no ${LOCAL_FILE}; reading perun's ${PERUN_FILE}${ignored}\n`);
    files.push(perun.layer);
  }
  // A file given with -c (or a joulegate file) may be perun's: its perun-only settings, once.
  for (const layer of files)
    if (layer !== perun?.layer && layer.ignored)
      process.stderr.write(
        `joulegate: ${layer.origin}: ignored perun settings joulegate has no use for: ${layer.ignored.join(', ')}\n`,
      );
  // perun's PERUN_<KEY> names, below joulegate's own.
  const layers: ConfigLayer[] = [...files, envLayer(process.env, 'PERUN'), envLayer()];
  const flags: Record<string, string | undefined> = {};
  for (const [key, flag] of CONFIG_FLAGS) flags[key] = flagValue(opts, key, flag);
  layers.push(flatLayer('command line', flags));
  return resolveConfig(layers);
}
