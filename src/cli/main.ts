import { Command, CommanderError } from 'commander';
import { errorMessage } from '../platform/errors.js';
import { COMMANDS } from './commands/index.js';
import { VERSION } from './version.js';

/**
 * `joulegate` entry point. Each subcommand lives in its own module under commands/ and adds
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

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`Error: ${errorMessage(err)}\n`);
    process.exitCode = 1;
  },
);
