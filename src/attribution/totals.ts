import { type IntervalShares, MICROJOULES_PER_JOULE } from './engine.js';

/**
 * Running sums of interval shares over a run, in integer µJ held as bigint: a node drawing 10 kW
 * for ten days passes 2^53 µJ, where Number sums would start to round. Conservation therefore
 * holds for the totals exactly as it does for each interval.
 */
export class AttributionTotals {
  private readonly consumers = new Map<string, bigint>();
  private measured = 0n;
  private unattributed = 0n;
  private idle = 0n;
  private missing = 0;
  private missingSeconds = 0;

  add(shares: IntervalShares): void {
    if (shares.status === 'missing') {
      this.missing++;
      this.missingSeconds += shares.durationS;
      return;
    }
    this.measured += BigInt(shares.measuredUj);
    this.unattributed += BigInt(shares.unattributedUj);
    this.idle += BigInt(shares.idleUj);
    for (const c of shares.consumers) {
      this.consumers.set(c.id, (this.consumers.get(c.id) ?? 0n) + BigInt(c.uj));
    }
  }

  /** Totals in µJ. `consumers` lists every consumer that had a share in some interval. */
  microjoules(): { measured: bigint; unattributed: bigint; idle: bigint; consumers: Map<string, bigint> } {
    return {
      measured: this.measured,
      unattributed: this.unattributed,
      idle: this.idle,
      consumers: new Map(this.consumers),
    };
  }

  /** A consumer's energy in J (0 when it never had a share, which differs from never measured: see missingIntervals). */
  consumerJ(id: string): number {
    return microjoulesToJoules(this.consumers.get(id) ?? 0n);
  }

  /** Intervals left out because the device's energy was not measured, and their length. */
  get missingIntervals(): { count: number; seconds: number } {
    return { count: this.missing, seconds: this.missingSeconds };
  }
}

/** A µJ total in J for display: one rounding below 2^53 µJ, whole joules kept exact above. */
export function microjoulesToJoules(uj: bigint): number {
  if (uj <= BigInt(Number.MAX_SAFE_INTEGER) && uj >= -BigInt(Number.MAX_SAFE_INTEGER)) {
    return Number(uj) / MICROJOULES_PER_JOULE;
  }
  const perJoule = BigInt(MICROJOULES_PER_JOULE);
  return Number(uj / perJoule) + Number(uj % perJoule) / MICROJOULES_PER_JOULE;
}
