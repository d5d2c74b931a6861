import type { BatchRequest } from '../ipc/batch/protocol.js';

/**
 * The port through which joulegated starts batch servers (GEOPM's PlatformStartBatch). The
 * daemon does the single permission check (names against the session's lists, domains and
 * indices against the topology) and enters write mode when controls are requested; the
 * launcher only starts and stops the server process (src/service/batch-launcher.ts).
 */
/** One requested signal or control, as the server gets it. */
export type BatchRequestEntry = BatchRequest;

export interface BatchStartRequest {
  /** The daemon's run directory (JOULEGATE_RUN_PATH), where FIFOs and buffers live. */
  runDir: string;
  clientPid: number;
  clientUid: number;
  clientGid: number;
  signals: BatchRequestEntry[];
  controls: BatchRequestEntry[];
}

/**
 * How many batch servers may run at once (a start takes its place when its turn comes, not
 * while it waits for it; more are refused), and how starts are admitted.
 */
export interface BatchServerLimits {
  /** Per client uid; also the most starts one uid may have waiting. */
  perUser: number;
  /** For the whole node. */
  total: number;
  /** Starts in progress at once (as many as the launcher serves well); the others wait their turn. */
  startsAtOnce: number;
  /**
   * A start not answered within this, waiting included, is abandoned and its server ended: it
   * stays below the clients' D-Bus reply timeout (25 s in libdbus and sd-bus), so no client
   * gets a server it has stopped waiting for.
   */
  startTimeoutMs: number;
}

export interface BatchServerHandle {
  serverPid: number;
  /** Key that names the server's FIFOs and buffers (GEOPM: the client pid as a string). */
  serverKey: string;
  /**
   * Lets the client connect. A started server accepts no client until the daemon has recorded
   * it (so a server the daemon drops meanwhile can never write a control), and is stopped if no
   * client connects soon after.
   */
  admit(): void;
  /**
   * Stops the server; resolves once it is done with its client (exited, or released: its client
   * had already quit). Safe to call more than once.
   */
  stop(): Promise<void>;
  /**
   * Resolves when the server is done with its client, for whatever reason: the process exited,
   * or the client quit or went away and the server went back to the pool (kept for the next
   * start of the same uid).
   */
  exited: Promise<void>;
}

export interface BatchLauncher {
  readonly limits: BatchServerLimits;
  /**
   * Starts a server for `req`. Work for later requests (loading the next spare server) waits
   * for `answered`, so that it does not compete with this request's reply (default: none).
   */
  start(req: BatchStartRequest, answered?: Promise<void>): Promise<BatchServerHandle>;
}
