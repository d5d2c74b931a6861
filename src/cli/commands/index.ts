import type { Command } from 'commander';
import { register as registerAccess } from './access.js';
import { registerMonitorCommands } from './energy-monitor.js';
import { register as registerRead } from './read.js';
import { register as registerSession } from './session.js';
import { register as registerTop } from './top.js';
import { register as registerTopo } from './topo.js';
import { register as registerWrite } from './write.js';

/** Adds one subcommand to the program. */
export type RegisterCommand = (program: Command) => void;

// One entry per subcommand module.
export const COMMANDS: RegisterCommand[] = [
  registerMonitorCommands,
  registerRead,
  registerWrite,
  registerSession,
  registerTopo,
  registerAccess,
  registerTop,
];
