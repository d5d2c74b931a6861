/** GEOPM's command names and the joulegate subcommand each one is (bin/geopm*). */
export const GEOPM_TOOLS: Readonly<Record<string, string>> = {
  geopmread: 'read',
  geopmwrite: 'write',
  geopmsession: 'session',
  geopmaccess: 'access',
};

/** The one-shot commands: GEOPM's tools, which a run may load on their own (src/cli/one-shot.ts). */
const ONE_SHOT_COMMANDS: readonly string[] = Object.values(GEOPM_TOOLS);

/**
 * The one-shot command this run is, when it is one: the GEOPM tool `asTool` stands for (set by
 * bin/geopm*), else the first argument. Help, global options and every other command: none.
 */
export function oneShotCommand(argv: readonly string[], asTool: string | undefined): string | undefined {
  const first =
    asTool !== undefined ? (Object.hasOwn(GEOPM_TOOLS, asTool) ? GEOPM_TOOLS[asTool] : undefined) : argv[2];
  return first !== undefined && ONE_SHOT_COMMANDS.includes(first) ? first : undefined;
}
