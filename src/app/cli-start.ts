import { errorMessage } from '../platform/errors.js';

/**
 * Start-up shared by the two CLI bundles (dist/app/joulegate.cjs, the whole program, and
 * dist/app/joulegate-tools.cjs, the one-shot commands alone): the environment and stdout set
 * up as every command expects, then `run` with the arguments and the GEOPM tool name that
 * bin/geopm* set, its result the exit status.
 */
export function startCli(run: (argv: string[], asTool: string | undefined) => Promise<number>): void {
  // bin/joulegate moves NODE_EXTRA_CA_CERTS aside so that Node skips parsing a CA bundle this
  // process never uses; what joulegate starts (the monitored app) gets it back.
  const savedCaCerts = process.env.JOULEGATE_SAVED_NODE_EXTRA_CA_CERTS;
  if (savedCaCerts !== undefined) {
    process.env.NODE_EXTRA_CA_CERTS = savedCaCerts;
    delete process.env.JOULEGATE_SAVED_NODE_EXTRA_CA_CERTS;
  }

  // A reader that went away (`joulegate … | head`) is not our failure: the rest of the output is
  // dropped and the exit status stays what the command decides (the monitored app's, for
  // `monitor`, whose report files are written regardless).
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') return;
    process.stderr.write(`Error: cannot write to standard output: ${errorMessage(err)}\n`);
    process.exitCode = 1;
  });

  // bin/geopmread and its siblings run this program under GEOPM's command names.
  const asTool = process.env.JOULEGATE_AS_GEOPM_TOOL;
  delete process.env.JOULEGATE_AS_GEOPM_TOOL;
  run(process.argv, asTool).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`Error: ${errorMessage(err)}\n`);
      process.exitCode = 1;
    },
  );
}
