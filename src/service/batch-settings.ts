import { FOLLOW_CLIENT_ENV, NATIVE_LOOP_ENV } from '../ipc/batch/protocol.js';
import { JoulegateError } from '../platform/errors.js';
import type { BatchServerLimits } from './batch-port.js';

/** The daemon's batch server settings, from its environment (docs/service.md, "Batch servers"). */
export interface BatchSettings extends BatchServerLimits {
  /** A server whose client has not connected within this is stopped. */
  idleTimeoutMs: number;
  /** Servers kept loaded ahead of requests (0: each start loads a new process). */
  spares: number;
  /**
   * Most spares kept while starts come in bursts (the pool grows to the starts of the last 2 s).
   * 1 by default: on a node without idle cores the extra loads slow a burst (docs/batch.md).
   */
  maxSpares: number;
  /**
   * Clients one server process serves, one after another (kept for the same uid between them),
   * before it is let go and a fresh process takes its place.
   */
  clientsPerServer: number;
}

export const DEFAULT_BATCH_SETTINGS: Readonly<BatchSettings> = {
  perUser: 16,
  total: 64,
  idleTimeoutMs: 10_000,
  spares: 1,
  maxSpares: 1,
  clientsPerServer: 100,
  /** 0: one per CPU (the launcher loads at most that many server processes at once). */
  startsAtOnce: 0,
  startTimeoutMs: 20_000,
};

/** Each setting's variable, the smallest value it takes, and how a value maps to the setting. */
const VARIABLES = [
  { name: 'JOULEGATE_BATCH_MAX_PER_USER', key: 'perUser', min: 1, scale: 1 },
  { name: 'JOULEGATE_BATCH_MAX_SERVERS', key: 'total', min: 1, scale: 1 },
  { name: 'JOULEGATE_BATCH_IDLE_TIMEOUT', key: 'idleTimeoutMs', min: 0.1, scale: 1000 },
  { name: 'JOULEGATE_BATCH_SPARES', key: 'spares', min: 0, scale: 1 },
  { name: 'JOULEGATE_BATCH_MAX_SPARES', key: 'maxSpares', min: 0, scale: 1 },
  { name: 'JOULEGATE_BATCH_CLIENTS_PER_SERVER', key: 'clientsPerServer', min: 1, scale: 1 },
  { name: 'JOULEGATE_BATCH_STARTS_AT_ONCE', key: 'startsAtOnce', min: 0, scale: 1 },
  { name: 'JOULEGATE_BATCH_START_TIMEOUT', key: 'startTimeoutMs', min: 0.1, scale: 1000 },
] as const;

/** The settings, defaults overridden by the variables that are set; a bad value throws naming it. */
export function batchSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): BatchSettings {
  const settings: BatchSettings = { ...DEFAULT_BATCH_SETTINGS };
  for (const v of VARIABLES) {
    const text = env[v.name];
    if (text === undefined || text === '') continue;
    const value = Number(text);
    const whole = v.scale === 1;
    if (!Number.isFinite(value) || value < v.min || (whole && !Number.isInteger(value))) {
      const wanted = whole ? `an integer >= ${v.min}` : `a number of seconds >= ${v.min}`;
      throw new JoulegateError(`${v.name} must be ${wanted}, not "${text}"`);
    }
    settings[v.key] = Math.round(value * v.scale);
  }
  // Read by the servers themselves; checked here so that a typo stops the daemon, not a server.
  for (const name of [NATIVE_LOOP_ENV, FOLLOW_CLIENT_ENV]) {
    const flag = env[name];
    if (flag !== undefined && flag !== '' && flag !== '0' && flag !== '1')
      throw new JoulegateError(`${name} must be 0 or 1, not "${flag}"`);
  }
  return settings;
}
