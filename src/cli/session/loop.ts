/** A clock in seconds and a sleep that an abort signal cuts short; injectable for tests. */
export interface LoopClock {
  now(): number;
  sleep(seconds: number, signal?: AbortSignal): Promise<void>;
}

/** Resolves after `seconds`, or at once when `signal` aborts (never rejects). */
export function abortableSleep(seconds: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, seconds * 1000));
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const realClock: LoopClock = {
  now: () => performance.now() / 1000,
  sleep: abortableSleep,
};

export interface TimedLoopOptions {
  /** Seconds between iteration starts. */
  period: number;
  /** Iterations after the first; undefined = until stopped. */
  numPeriod: number | undefined;
  clock?: LoopClock;
  /** Aborting ends the loop before the next iteration (SIGINT/SIGTERM). */
  signal?: AbortSignal;
}

/**
 * Runs `body(idx)` numPeriod + 1 times: the first at once, iteration k at start + k × period.
 * Deadlines are absolute, so time spent in `body` (or a late wake-up) does not accumulate as
 * drift; an iteration that is already late runs without sleeping. `body` returns false to stop.
 * Returns the number of iterations run.
 */
export async function runTimedLoop(
  opts: TimedLoopOptions,
  body: (idx: number) => Promise<boolean> | boolean,
): Promise<number> {
  const clock = opts.clock ?? realClock;
  const start = clock.now();
  let idx = 0;
  for (; opts.numPeriod === undefined || idx <= opts.numPeriod; idx++) {
    if (idx > 0) {
      const wait = start + idx * opts.period - clock.now();
      if (wait > 0) await clock.sleep(wait, opts.signal);
    }
    if (opts.signal?.aborted) break;
    if (!(await body(idx))) {
      idx++;
      break;
    }
  }
  return idx;
}
