import type { Command } from 'commander';

/** Adds one subcommand to the program. */
export type RegisterCommand = (program: Command) => void;

// One entry per subcommand module.
export const COMMANDS: RegisterCommand[] = [];
