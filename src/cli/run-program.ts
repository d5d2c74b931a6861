import { Command, CommanderError } from 'commander';
import { errorMessage } from '../platform/errors.js';
import { VERSION } from '../platform/version.js';
import { GEOPM_TOOLS } from './tool-names.js';

/**
 * The `joulegate` program, its subcommands added by `register`: errors reach the user as one
 * line, never as a stack trace. With `asTool` (one of GEOPM_TOOLS, set by bin/geopmread and the
 * like), the program is that one subcommand under GEOPM's name, so scripts written for GEOPM
 * run unchanged.
 */
export async function runProgram(
  argv: string[],
  asTool: string | undefined,
  register: (program: Command) => Promise<void>,
): Promise<number> {
  const program = new Command('joulegate')
    .description('Measure and control the energy of this node')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  await register(program);
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
