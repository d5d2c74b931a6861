/**
 * An exported Prometheus counter that mirrors a source energy total (joules).
 *
 * Sources are already wrap-corrected (the powercap, MSR and GPU backends extend their hardware
 * counters), but their totals start at the raw hardware value and restart when the source does
 * (a new batch server behind joulegated). Prometheus reads any drop of a counter as a restart
 * from 0 and counts the new value in full, so the exporter publishes its own total instead:
 * 0 at the exporter's start, then the sum of the source's increases. A source that goes
 * backwards restarted: the energy between its last reading and its restart is unknown, so
 * nothing is added for that step and counting goes on from the new value. The published total
 * therefore only ever grows while the exporter runs; an exporter restart is a restart from 0,
 * exactly what increase() and rate() expect.
 */
export class ExportedCounter {
  private last: number | undefined;
  private total = 0;
  /** Times the source went backwards (restarted). */
  restarts = 0;

  /** Feeds one finite source reading; returns the published total. */
  feed(source: number): number {
    if (this.last !== undefined) {
      if (source >= this.last) this.total += source - this.last;
      else this.restarts++;
    }
    this.last = source;
    return this.total;
  }

  get value(): number {
    return this.total;
  }
}
