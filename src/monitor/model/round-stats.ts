import { RunningStats, summarize } from '../../platform/statistics.js';
import type { HostMetrics, RegionCallMetrics, RegionSummary, RoundMetrics, Stat } from './report-model.js';

/**
 * Statistics across rounds, kept as running sums so that any number of rounds costs the same
 * memory. They follow `stat()`'s rule exactly (same values in the same order): non-finite
 * values are gaps.
 */
class FiniteStats {
  private readonly stats = new RunningStats();

  add(v: number): void {
    // ±Infinity (a rate over no time) is as unknown as NaN here.
    if (Number.isFinite(v)) this.stats.add(v);
  }

  stat(): Stat {
    const { mean, std, min, max, sum } = this.stats.summary();
    return { mean, std, min, max, sum };
  }
}

/** The report summary's quantities: perun's MULTI_RUN statistics of the run totals. */
const HOST_QUANTITIES = {
  runtime: (h: HostMetrics) => h.runtime,
  energy: (h: HostMetrics) => h.facilityEnergy,
  power: (h: HostMetrics) => h.power,
  estimated_energy: (h: HostMetrics) => h.estimatedEnergy,
  co2: (h: HostMetrics) => h.co2,
  money: (h: HostMetrics) => h.money,
} as const;

/** Mean ± std (and min, max, sum) across rounds of the host totals. */
export class HostStats {
  private readonly stats = Object.fromEntries(
    Object.keys(HOST_QUANTITIES).map((k) => [k, new FiniteStats()]),
  ) as Record<keyof typeof HOST_QUANTITIES, FiniteStats>;

  add(host: HostMetrics): void {
    for (const [k, of] of Object.entries(HOST_QUANTITIES))
      this.stats[k as keyof typeof HOST_QUANTITIES].add(of(host));
  }

  summary(): Record<keyof typeof HOST_QUANTITIES, Stat> {
    return Object.fromEntries(Object.entries(this.stats).map(([k, s]) => [k, s.stat()])) as Record<
      keyof typeof HOST_QUANTITIES,
      Stat
    >;
  }
}

const CALL_QUANTITIES = {
  runtime: (c: RegionCallMetrics) => c.runtime,
  energy: (c: RegionCallMetrics) => c.energy,
  power: (c: RegionCallMetrics) => c.power,
  estimatedEnergy: (c: RegionCallMetrics) => c.estimatedEnergy,
  cpuUtil: (c: RegionCallMetrics) => c.cpuUtil ?? Number.NaN,
  gpuUtil: (c: RegionCallMetrics) => c.gpuUtil ?? Number.NaN,
} as const;
type CallQuantity = keyof typeof CALL_QUANTITIES;

/** Per region name: statistics over every call in every round, names in order of first call. */
export class RegionStats {
  private rounds = 0;
  private readonly byName = new Map<string, { calls: number; stats: Record<CallQuantity, FiniteStats> }>();

  addRound(calls: readonly RegionCallMetrics[]): void {
    this.rounds++;
    for (const call of calls) {
      let entry = this.byName.get(call.name);
      if (!entry) {
        const stats = Object.fromEntries(
          Object.keys(CALL_QUANTITIES).map((k) => [k, new FiniteStats()]),
        ) as Record<CallQuantity, FiniteStats>;
        entry = { calls: 0, stats };
        this.byName.set(call.name, entry);
      }
      entry.calls++;
      for (const [k, of] of Object.entries(CALL_QUANTITIES)) entry.stats[k as CallQuantity].add(of(call));
    }
  }

  summary(): RegionSummary[] {
    return [...this.byName].map(([name, { calls, stats }]) => ({
      name,
      callsPerRound: calls / Math.max(1, this.rounds),
      runtime: stats.runtime.stat(),
      energy: stats.energy.stat(),
      power: stats.power.stat(),
      estimatedEnergy: stats.estimatedEnergy.stat(),
      cpuUtil: stats.cpuUtil.stat(),
      gpuUtil: stats.gpuUtil.stat(),
    }));
  }
}

/** Mean ± std (and min, max, sum) of one quantity across rounds or calls; gaps skipped. */
export function stat(values: readonly number[]): Stat {
  // ±Infinity (a rate over no time) is as unknown as NaN here.
  const { mean, std, min, max, sum } = summarize(values.filter(Number.isFinite));
  return { mean, std, min, max, sum };
}

/** Per region name: statistics over every call in every round. */
export function summarizeRegions(rounds: readonly RoundMetrics[]): RegionSummary[] {
  const stats = new RegionStats();
  for (const r of rounds) stats.addRound(r.regions);
  return stats.summary();
}
