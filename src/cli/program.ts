import type { Command } from 'commander';
import { JoulegateError } from '../platform/errors.js';
import type { Programs } from './commands/cluster.js';
import { runProgram } from './run-program.js';
import { oneShotCommand } from './tool-names.js';

export { GEOPM_TOOLS } from './tool-names.js';

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
 * itself to the program. A one-shot command named first (as bin/geopm* and `joulegate session …`
 * do) is all such a run loads (src/cli/one-shot.ts): neither the monitor, cluster and
 * configuration commands nor their modules (the configuration schema) are set up, a fifth of its
 * start-up (docs/cli.md, "Start-up"); anything else gets the whole program. `programs` are the
 * long-running programs some commands start (assembled in src/app/).
 */
export function main(argv: string[], programs: Programs, asTool?: string): Promise<number> {
  return runProgram(argv, asTool, async (program: Command) => {
    if (oneShotCommand(argv, asTool) !== undefined)
      (await import('./one-shot.js')).registerOneShot(program, argv, asTool);
    else await registerAll(program, programs);
  });
}
