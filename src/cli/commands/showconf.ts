import type { Command } from 'commander';
import { addConfigOptions, configFromOptions, optionsWithGlobals } from '../config-options.js';

/** `joulegate showconf [--default]`: the effective (or default) configuration as INI. */
export function register(program: Command): void {
  const cmd = program
    .command('showconf')
    .summary('Print the configuration as INI (a valid .joulegate.ini)')
    .option('--default', 'the built-in defaults only');
  addConfigOptions(cmd, []);
  cmd.action(async (own: Record<string, unknown>, self: Command) => {
    const { configToIni, resolveConfig } = await import('../../monitor/config/load.js');
    // perun's global -l/--log_lvl and --log_file show in the configuration printed.
    const config = own.default ? resolveConfig([]) : await configFromOptions(optionsWithGlobals(self));
    process.stdout.write(configToIni(config));
  });
}
