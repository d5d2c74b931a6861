import { advanceAcrossRestart } from './counter-state.js';

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
 * therefore only ever grows while the exporter runs. With a state directory an exporter restart
 * continues the total (`resume`); without one it is a restart from 0, which increase() and rate()
 * read as a reset.
 */
export class ExportedCounter {
  private last: number | undefined;
  private total = 0;
  /** Times the source went backwards (restarted). */
  restarts = 0;
  /** A saved counter of an earlier exporter process, until the first reading continues it. */
  private resumeFrom?: { last: number; range: number | undefined };

  /**
   * Continues an earlier exporter process's counter (counter-state.ts): its total, plus, at the
   * first reading, what the source advanced since its last one. Returns nothing; `feed` tells.
   */
  resume(saved: { last: number; total: number }, range: number | undefined): void {
    this.total = saved.total;
    this.resumeFrom = { last: saved.last, range };
  }

  /**
   * Feeds one finite source reading; returns the published total. The first reading after
   * `resume` adds what the source advanced while no exporter ran, where that can be known;
   * `resumed` then says whether it could.
   */
  feed(source: number): number {
    if (this.resumeFrom !== undefined) {
      const advance = advanceAcrossRestart(this.resumeFrom.last, source, this.resumeFrom.range);
      this.resumeFrom = undefined;
      this.resumed = advance === undefined ? 'advance-unknown' : 'continued';
      if (advance !== undefined) this.total += advance;
    }
    if (this.last !== undefined) {
      if (source >= this.last) this.total += source - this.last;
      else this.restarts++;
    }
    this.last = source;
    return this.total;
  }

  /** How the first reading after `resume` went; undefined without a resume. */
  resumed?: 'continued' | 'advance-unknown';

  get value(): number {
    return this.total;
  }

  /** The source's last reading, undefined before the first. */
  get lastSource(): number | undefined {
    return this.last;
  }
}
