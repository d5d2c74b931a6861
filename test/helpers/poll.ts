import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `check` every `everyMs` until it holds; fails naming `what` after `ms` (CI machines are
 * loaded: a test waits for a condition, never for a fixed time).
 */
export async function until(check: () => boolean, what: string, ms = 30_000, everyMs = 20): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await sleep(everyMs);
  }
}
