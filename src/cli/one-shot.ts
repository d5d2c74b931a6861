import type { Command } from 'commander';
import { register as registerAccess } from './commands/access.js';
import { register as registerRead } from './commands/read.js';
import { register as registerSession } from './commands/session.js';
import { register as registerWrite } from './commands/write.js';
import { runProgram } from './run-program.js';
import { oneShotCommand } from './tool-names.js';

const REGISTER: Readonly<Record<string, (program: Command) => void>> = {
  read: registerRead,
  write: registerWrite,
  session: registerSession,
  access: registerAccess,
};

/** Adds the one-shot command this run is (oneShotCommand) to `program`; false when it is none. */
export function registerOneShot(program: Command, argv: readonly string[], asTool?: string): boolean {
  const command = oneShotCommand(argv, asTool);
  if (command === undefined) return false;
  REGISTER[command]!(program);
  return true;
}

/**
 * The program of a one-shot command alone (read, write, session, access and the geopm* names),
 * for the bundle that holds only these commands (dist/app/joulegate-tools.cjs, docs/cli.md,
 * "Start-up"); its loader starts it only for such a command.
 */
export function mainOneShot(argv: string[], asTool?: string): Promise<number> {
  return runProgram(argv, asTool, async (program) => {
    if (!registerOneShot(program, argv, asTool)) throw new Error('not a one-shot command');
  });
}
