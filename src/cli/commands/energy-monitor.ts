import type { Command } from 'commander';
import { register as registerExport } from './export.js';
import { register as registerMetadata } from './metadata.js';
import { register as registerMonitor } from './monitor.js';
import { register as registerSensors } from './sensors.js';
import { register as registerShowconf } from './showconf.js';

/** The perun-style commands: monitor, sensors, metadata, export, showconf. */
export function registerMonitorCommands(program: Command): void {
  for (const register of [
    registerMonitor,
    registerSensors,
    registerMetadata,
    registerExport,
    registerShowconf,
  ]) {
    register(program);
  }
}
