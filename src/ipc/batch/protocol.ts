import { join } from 'node:path';
import { JoulegateError } from '../../platform/errors.js';
import * as z from '../../platform/validation.js';

/**
 * The batch protocol's fixed parts, byte-compatible with GEOPM's BatchServer/BatchClient:
 * shared buffers are regular files `<run>/batch-buffer-<key>-signal|control` holding a 64-byte
 * header (a process-shared pthread mutex, unused by the batch path) followed by N little-endian
 * doubles in request order; two FIFOs `<run>/batch-status-<key>-in|out` carry one-byte messages.
 * `in` is client → server, `out` is server → client. The key is the client's pid.
 */
export const HEADER_BYTES = 64;

export const Message = {
  Read: 'r'.charCodeAt(0),
  Write: 'w'.charCodeAt(0),
  Continue: 'c'.charCodeAt(0),
  Quit: 'q'.charCodeAt(0),
} as const;

export type BufferKind = 'signal' | 'control';

export function bufferPath(runDir: string, key: string, kind: BufferKind): string {
  return join(runDir, `batch-buffer-${key}-${kind}`);
}

export function fifoPath(runDir: string, key: string, direction: 'in' | 'out'): string {
  return join(runDir, `batch-status-${key}-${direction}`);
}

/** Every path a server with this key may create, for cleanup after it ends. */
export function batchPaths(runDir: string, key: string): string[] {
  return [
    bufferPath(runDir, key, 'signal'),
    bufferPath(runDir, key, 'control'),
    fifoPath(runDir, key, 'in'),
    fifoPath(runDir, key, 'out'),
  ];
}

export function bufferBytes(count: number): number {
  return HEADER_BYTES + 8 * count;
}

const batchRequestSchema = z.object({ name: z.string(), domain: z.int(), idx: z.int() });
/** One signal or control a batch server pushes: the D-Bus (domain_type, domain_idx, name) triple. */
export type BatchRequest = z.infer<typeof batchRequestSchema>;

const id = () => z.int().check(z.nonnegative());
const serverStartSchema = z.object({
  /** The daemon's run directory, where the buffers and FIFOs are created. */
  runDir: z.string(),
  /** Names the files: the client's pid, as a string (GEOPM's key). */
  key: z.string().check(z.regex(/^\d+$/, 'key must be a client pid in decimal digits')),
  /** Owner of the files: only the client may open them. */
  clientUid: id(),
  clientGid: id(),
  signals: z.array(batchRequestSchema),
  controls: z.array(batchRequestSchema),
});
/**
 * What the daemon's launcher sends a batch server on stdin to start serving a client (not part of
 * GEOPM's protocol: GEOPM forks the server with the request in memory). One JSON line, built with
 * this type by the launcher and checked with parseServerStart() by the server.
 */
export type ServerStart = z.infer<typeof serverStartSchema>;

/** The line that carries `start` to the server. */
export function serverStartLine(start: ServerStart): string {
  return JSON.stringify(start);
}

/** The start request in `line`; a line that is not one is refused with a one-line reason. */
export function parseServerStart(line: string): ServerStart {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new JoulegateError(`batch start request is not JSON: ${line.slice(0, 80)}`);
  }
  const parsed = serverStartSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const why = parsed.error.issues.map((i) => `${i.path.join('.') || '(request)'}: ${i.message}`).join('; ');
  throw new JoulegateError(`invalid batch start request: ${why}`);
}

/**
 * What a batch server process tells the daemon's launcher, one JSON line each on stdout (not
 * part of GEOPM's protocol): `idle` once its backends are loaded and it waits for a request,
 * `ready` once the request is pushed and the files exist, `connected` once the client has opened
 * both FIFOs, `released` once its client quit or went away and the server is done with it, with
 * which loop answered the client's reads in words (its files and mappings gone; it then loads a fresh PlatformIO and reports `idle` again, to serve
 * another client of the same uid, or exits once the launcher lets it go), `error` when it cannot
 * go on (it then exits).
 */
export type ServerReport =
  | { idle: true }
  | { ready: true }
  | { connected: true }
  | { released: ReleaseReason; sampling?: string }
  | { error: string };

/** Why a connected server let its client go cleanly (any other end is the process's end). */
export type ReleaseReason = 'quit' | 'client closed';

/**
 * What the launcher sends a server on stdin: first the start request (serverStartLine()), then this line
 * once the daemon has recorded the server, which lets the client connect. End of file before
 * that (the daemon is gone or dropped the request) ends the server, files removed.
 */
export const ADMIT_LINE = 'admit';

/**
 * The daemon's setting that its batch servers read from the environment they inherit: 0 makes
 * them sample in JavaScript even where the native loop is built (docs/batch.md).
 */
export const NATIVE_LOOP_ENV = 'JOULEGATE_BATCH_NATIVE_LOOP';

/** Likewise: 0 leaves a batch server wherever the kernel runs it (no moving next to its client). */
export const FOLLOW_CLIENT_ENV = 'JOULEGATE_BATCH_FOLLOW_CLIENT';
