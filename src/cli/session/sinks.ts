import { closeSync, openSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { JoulegateError, shortValue } from '../../platform/errors.js';
import { ioReason } from '../../platform/make-dirs.js';
import { PendingFile, writeAll } from '../../platform/whole-file.js';
import { endsRequests } from './requests.js';

/**
 * An output: stdout or a file written synchronously. A trace file is written in place, row by
 * row, as geopmsession writes it (users follow it while the session runs); a report file is
 * written under a temp name and moved into place when the session ends well (`close(true)`).
 * A session that fails leaves neither.
 */
export interface Sink {
  write(text: string): void;
  close(complete: boolean): void;
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
export function openSink(path: string | undefined, live = false): Sink | undefined {
  if (path === undefined || path === '/dev/null') return undefined;
  if (path === '-') {
    guardStdout();
    return stdoutSink;
  }
  if (live) return liveSink(path);
  const file = new PendingFile({ path });
  return {
    write: (text) => writeAll(file.fd, Buffer.from(text)),
    close: (complete) => {
      if (complete) file.commit();
      else file.discard();
    },
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

/** A file written in place as rows come; removed when the session fails. */
function liveSink(path: string): Sink {
  let fd: number;
  try {
    fd = openSync(path, 'w', 0o644);
  } catch (err) {
    throw new JoulegateError(`cannot open ${shortValue(path)} for writing: ${ioReason(err)}`);
  }
  return {
    write: (text) => writeAll(fd, Buffer.from(text)),
    close: (complete) => {
      closeSync(fd);
      if (!complete) rmSync(path, { force: true });
    },
  };
}
