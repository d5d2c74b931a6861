/**
 * Polls `check` until it gives a value (anything but undefined or false) and returns it; fails
 * naming `what` after `limitMs`. Tests wait for conditions this way, never for a fixed time.
 */
export async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  limitMs = 60_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
