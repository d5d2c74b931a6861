import { Command, CommanderError } from 'commander';
import { errorMessage, JoulegateError } from '../platform/errors.js';
import { VERSION } from '../platform/version.js';
import { type Programs, registerClusterCommands } from './commands/cluster.js';
import { COMMANDS } from './commands/index.js';
import { addGlobalConfigOptions, CONFIG_COMMANDS, hasGlobalConfigOptions } from './config-options.js';

/** GEOPM's command names and the joulegate subcommand each one is (bin/geopm*). */
export const GEOPM_TOOLS: Readonly<Record<string, string>> = {
  geopmread: 'read',
  geopmwrite: 'write',
  geopmsession: 'session',
  geopmaccess: 'access',
};

/**
 * The `joulegate` program. Each subcommand lives in its own module under commands/ and adds
 * itself to the program; errors reach the user as one line, never as a stack trace.
 * With `asTool` (one of GEOPM_TOOLS, set by bin/geopmread and the like), the program is that
 * one subcommand under GEOPM's name, so scripts written for GEOPM run unchanged. `programs` are
 * the long-running programs some commands start (assembled in src/app/).
 */
export async function main(argv: string[], programs: Programs, asTool?: string): Promise<number> {
  const program = new Command('joulegate')
    .description('Measure and control the energy of this node')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  for (const register of COMMANDS) register(program);
  registerClusterCommands(program, programs);
  addGlobalConfigOptions(program);
  program.hook('preSubcommand', (_, sub) => {
    if (hasGlobalConfigOptions(program) && !CONFIG_COMMANDS.includes(sub.name()))
      throw new JoulegateError(
        `-c/--config and -l/--log-lvl before a subcommand apply to ${CONFIG_COMMANDS.join(', ')}, not to ${sub.name()}`,
      );
  });
  let args = argv;
  if (asTool !== undefined) {
    const sub = GEOPM_TOOLS[asTool];
    const command = program.commands.find((c) => c.name() === sub);
    if (sub === undefined || command === undefined) {
      process.stderr.write(`Error: ${asTool} is not one of ${Object.keys(GEOPM_TOOLS).join(', ')}\n`);
      return 2;
    }
    // Usage and help then read "geopmread [options] …", as GEOPM's tools print them.
    command.name(asTool);
    command.configureHelp({ commandUsage: (c) => `${asTool} ${c.usage()}` });
    args = [...argv.slice(0, 2), asTool, ...argv.slice(2)];
  }
  try {
    await program.parseAsync(args);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    process.stderr.write(`Error: ${errorMessage(err)}\n`);
    return 1;
  }
}
