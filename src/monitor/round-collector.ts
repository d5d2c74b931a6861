import type { RegionSummary, RoundReport, Stat } from './model/report-model.js';
import { HostStats, RegionStats } from './model/round-stats.js';

/** At most this many rounds are kept whole in a report (samples, events, per-round figures). */
export const KEPT_ROUNDS = 100;
/** ... and at most this many sample values (timestamps included) across them. */
export const KEPT_SAMPLE_VALUES = 2_000_000;

/**
 * Collects a run's rounds so that memory and report size stay bounded over any number of them:
 * every round counts in the statistics; only the first KEPT_ROUNDS (within KEPT_SAMPLE_VALUES)
 * are kept whole, plus a round that must be (the failed last one).
 */
export class RoundCollector {
  readonly kept: RoundReport[] = [];
  /** Rounds counted in the statistics but not kept whole. */
  omitted = 0;
  private keptValues = 0;
  private readonly host = new HostStats();
  private readonly regions = new RegionStats();

  /** Adds a round; false when it is only in the statistics. */
  add(round: RoundReport, mustKeep = false): boolean {
    this.host.add(round.metrics.host);
    this.regions.addRound(round.metrics.regions);
    const values = round.times.length * (1 + round.values.length);
    const room = this.kept.length < KEPT_ROUNDS && this.keptValues + values <= KEPT_SAMPLE_VALUES;
    // The first round is kept whatever its size: it is in memory already, and the only detail.
    if (!(room || mustKeep || this.kept.length === 0)) {
      this.omitted++;
      return false;
    }
    this.kept.push(round);
    this.keptValues += values;
    return true;
  }

  summary(): Record<string, Stat> {
    return this.host.summary();
  }

  regionSummary(): RegionSummary[] {
    return this.regions.summary();
  }
}
