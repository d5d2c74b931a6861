import { Command, CommanderError } from 'commander';
import { errorMessage } from '../platform/errors.js';
import { VERSION } from '../platform/version.js';
import { COMMANDS } from './commands/index.js';

/**
 * The `joulegate` program. Each subcommand lives in its own module under commands/ and adds
 * itself to the program; errors reach the user as one line, never as a stack trace.
 */
export async function main(argv: string[]): Promise<number> {
  const program = new Command('joulegate')
    .description('Measure and control the energy of this node')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  for (const register of COMMANDS) register(program);
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    process.stderr.write(`Error: ${errorMessage(err)}\n`);
    return 1;
  }
}
