import { closeSync, openSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { errorMessage, JoulegateError } from '../../platform/errors.js';
import { endsRequests } from './requests.js';

/** An output: stdout or a file written synchronously, so every row is out when written. */
export interface Sink {
  write(text: string): void;
  close(): void;
}

let stdoutClosed = false;
let stdoutGuarded = false;

/**
 * A reader that goes away (`| head`) makes stdout fail with EPIPE; from then on output to it is
 * dropped instead of crashing the process with an unhandled 'error' event.
 */
function guardStdout(): void {
  if (stdoutGuarded) return;
  stdoutGuarded = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    stdoutClosed = true;
    if (err.code !== 'EPIPE') {
      process.stderr.write(`Error: cannot write to stdout: ${err.message}\n`);
      process.exitCode = 255;
    }
  });
}

const stdoutSink: Sink = {
  write: (text) => {
    if (!stdoutClosed) process.stdout.write(text);
  },
  close: () => {},
};

/** `-` is stdout; `/dev/null` (or no path) means the output is off, as in geopmsession. */
export function openSink(path: string | undefined): Sink | undefined {
  if (path === undefined || path === '/dev/null') return undefined;
  if (path === '-') {
    guardStdout();
    return stdoutSink;
  }
  let fd: number;
  try {
    fd = openSync(path, 'w', 0o644);
  } catch (err) {
    throw new JoulegateError(`cannot open ${path} for writing: ${errorMessage(err)}`);
  }
  return {
    write: (text) => {
      writeSync(fd, text);
    },
    close: () => closeSync(fd),
  };
}

/**
 * Reads request lines up to the first empty line (or end of input) without waiting for the
 * writer to close the stream, then releases it so the process can exit.
 */
export async function readRequestLines(input: Readable): Promise<string[]> {
  const rl = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  const lines: string[] = [];
  try {
    for await (const line of rl) {
      if (endsRequests(line)) break;
      lines.push(line.trim());
    }
  } finally {
    rl.close();
    input.destroy();
  }
  return lines;
}
