import { Command, CommanderError } from 'commander';
import { errorMessage, JoulegateError } from '../platform/errors.js';
import { VERSION } from '../platform/version.js';
import type { Programs } from './commands/cluster.js';
import type { RegisterCommand } from './commands/index.js';

/** GEOPM's command names and the joulegate subcommand each one is (bin/geopm*). */
export const GEOPM_TOOLS: Readonly<Record<string, string>> = {
  geopmread: 'read',
  geopmwrite: 'write',
  geopmsession: 'session',
  geopmaccess: 'access',
};

/**
 * The modules of GEOPM's one-shot tools, loaded on their own when one of them is the command: a
 * `geopmsession` or `joulegate read` then neither loads nor sets up the monitor, cluster and
 * configuration commands (their modules, the configuration schema), which were a fifth of its
 * start-up (docs/cli.md, "Start-up").
 */
const ONE_SHOT: Readonly<Record<string, () => Promise<{ register: RegisterCommand }>>> = {
  read: () => import('./commands/read.js'),
  write: () => import('./commands/write.js'),
  session: () => import('./commands/session.js'),
  access: () => import('./commands/access.js'),
};

/** Adds every subcommand and perun's global options to `program`. */
async function registerAll(program: Command, programs: Programs): Promise<void> {
  const [{ COMMANDS }, { registerClusterCommands }, config] = await Promise.all([
    import('./commands/index.js'),
    import('./commands/cluster.js'),
    import('./config-options.js'),
  ]);
  for (const register of COMMANDS) register(program);
  registerClusterCommands(program, programs);
  config.addGlobalConfigOptions(program);
  program.hook('preSubcommand', (_, sub) => {
    if (config.hasGlobalConfigOptions(program) && !config.CONFIG_COMMANDS.includes(sub.name()))
      throw new JoulegateError(
        `-c/--config and -l/--log-lvl before a subcommand apply to ${config.CONFIG_COMMANDS.join(', ')}, not to ${sub.name()}`,
      );
  });
}

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
  // A one-shot tool named first (as bin/geopm* and `joulegate session …` do) is all this run
  // needs; anything else (help, global options, other commands) gets the whole program.
  const first = asTool !== undefined ? GEOPM_TOOLS[asTool] : argv[2];
  if (first !== undefined && Object.hasOwn(ONE_SHOT, first)) (await ONE_SHOT[first]!()).register(program);
  else await registerAll(program, programs);
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
