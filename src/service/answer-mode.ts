import { JoulegateError } from '../platform/errors.js';

/**
 * How the daemon answers the calls GEOPM answers without an error reply (docs/service.md,
 * "GEOPM-style answers"): `geopm` (the default) as GEOPM 3.1 does, so a client written against
 * GEOPM sees what it expects; `strict` with the error replies that name the cause.
 */
export type AnswerMode = 'geopm' | 'strict';

export const ANSWER_MODE_VARIABLE = 'JOULEGATE_STRICT_ERRORS';

/** JOULEGATE_STRICT_ERRORS: unset, empty or 0 → `geopm`; 1 → `strict`; anything else throws. */
export function answerModeFromEnv(env: NodeJS.ProcessEnv = process.env): AnswerMode {
  const text = env[ANSWER_MODE_VARIABLE];
  if (text === undefined || text === '' || text === '0') return 'geopm';
  if (text === '1') return 'strict';
  throw new JoulegateError(`${ANSWER_MODE_VARIABLE} must be 0 or 1, not "${text}"`);
}
