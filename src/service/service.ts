import type { PlatformIO } from '../platform/platform-io.js';
import type { AccessLists } from './access/index.js';
import type { AnswerMode } from './answer-mode.js';
import type { BatchLauncher } from './batch-port.js';
import { CallerAccess } from './caller-access.js';
import { type MethodTable, methodTable } from './methods.js';
import { UsageLog } from './requests.js';
import type { Log } from './secure-files.js';
import { SessionManager } from './session-manager.js';
import { formatTopoCache } from './topo-cache.js';

export interface ServiceOptions {
  runDir: string;
  pio: PlatformIO;
  access: AccessLists;
  batch?: BatchLauncher;
  log: Log;
  /** How often session owners are checked for liveness (GEOPM: 1 s). */
  pollMs?: number;
  /** GEOPM's answers (default) or error replies for calls GEOPM does not fail; see answer-mode.ts. */
  answers?: AnswerMode;
}

/**
 * The GEOPM Service as joulegated runs it: the io.github.geopm method table over a session
 * manager (sessions, write mode, batch servers, profiles), the access lists and PlatformIO.
 */
export class GeopmService {
  readonly handlers: MethodTable;
  readonly log: Log;
  private readonly sessions: SessionManager;
  private readonly topoCache: string;

  constructor({ runDir, pio, access, batch, log, pollMs = 500, answers = 'geopm' }: ServiceOptions) {
    this.log = log;
    const callers = new CallerAccess(access, { signals: pio.signalNames(), controls: pio.controlNames() });
    this.sessions = new SessionManager({
      runDir,
      pio,
      log,
      batch,
      listsOf: (process) => callers.listsOf(process),
      pollMs,
    });
    this.topoCache = formatTopoCache(pio.topology);
    this.handlers = methodTable({
      pio,
      access,
      callers,
      sessions: this.sessions,
      usage: new UsageLog(),
      topoCache: this.topoCache,
      answers,
    });
  }

  /** Topology cache text (also written to the run dir by main). */
  topologyCache(): string {
    return this.topoCache;
  }

  /** Reloads sessions of an earlier daemon and starts watching session owners. */
  start(): Promise<void> {
    return this.sessions.start();
  }

  /** SIGTERM: restores the writer's controls, closes every session. */
  shutdown(): Promise<void> {
    return this.sessions.shutdown();
  }
}
