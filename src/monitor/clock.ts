/**
 * The one clock of the monitor, the sampler and the regions API: milliseconds on the
 * high-resolution monotonic clock, offset by the process's time origin so that two processes
 * (the monitor and the app it runs) share one basis without exchanging anything.
 */
export function clockMs(): number {
  return performance.timeOrigin + performance.now();
}
