const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * Blocks this thread for `ms` milliseconds. Only for short waits in code that must stay
 * synchronous (a retry before the event loop runs); everything else awaits a timer.
 */
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
