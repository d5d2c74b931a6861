import type { Command } from 'commander';
import { addConfigOptions, configFromOptions } from '../config-options.js';

/** `joulegate showconf [--default]`: the effective (or default) configuration as INI. */
export function register(program: Command): void {
  const cmd = program
    .command('showconf')
    .summary('Print the configuration as INI (a valid .joulegate.ini)')
    .option('--default', 'the built-in defaults only');
  addConfigOptions(cmd, []);
  cmd.action(async (opts: Record<string, unknown>) => {
    const { configToIni, resolveConfig } = await import('../../monitor/config/load.js');
    const config = opts.default ? resolveConfig([]) : await configFromOptions(opts, false);
    process.stdout.write(configToIni(config));
  });
}
