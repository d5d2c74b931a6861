/**
 * The one clock of the monitor, the sampler and the regions clients: CLOCK_MONOTONIC in
 * milliseconds. Node's process.hrtime reads CLOCK_MONOTONIC on Linux (libuv), and so does
 * Python's time.monotonic_ns(): the monitor and an app in either language stamp events on the
 * same clock without exchanging anything. (performance.timeOrigin + performance.now() did not
 * qualify: each process has its own origin, taken from the wall clock.)
 */
export function clockMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
