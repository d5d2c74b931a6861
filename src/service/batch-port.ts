/**
 * The port through which joulegated starts batch servers (GEOPM's PlatformStartBatch). The
 * daemon does the single permission check (names against the session's lists, domains and
 * indices against the topology) and enters write mode when controls are requested; the
 * launcher only starts and stops the server process. Implemented in src/batch/.
 */
export interface BatchRequestEntry {
  name: string;
  domain: number;
  idx: number;
}

export interface BatchStartRequest {
  /** The daemon's run directory (JOULEGATE_RUN_PATH), where FIFOs and buffers live. */
  runDir: string;
  clientPid: number;
  clientUid: number;
  clientGid: number;
  signals: BatchRequestEntry[];
  controls: BatchRequestEntry[];
}

export interface BatchServerHandle {
  serverPid: number;
  /** Key that names the server's FIFOs and buffers (GEOPM: the client pid as a string). */
  serverKey: string;
  /** Stops the server; resolves once it has exited. Safe to call more than once. */
  stop(): Promise<void>;
  /** Resolves when the server process has exited, for whatever reason. */
  exited: Promise<void>;
}

export interface BatchLauncher {
  start(req: BatchStartRequest): Promise<BatchServerHandle>;
}
