import type { EnergyMethod } from '../platform/signal-catalogue.js';
import type { IdlePolicy } from './engine.js';
import { ATTRIBUTED_GROUPS, type AttributedGroup, type EnergySource } from './meter.js';
import { type AttributionTotals, microjoulesToJoules } from './totals.js';

/**
 * The attribution section of a report (`monitor --attribute`): per device group, the node's
 * measured energy and how it splits into the app's share, the other named consumers' shares,
 * unattributed (what no named consumer ran: other users, the kernel) and idle. In µJ the parts
 * add up to `measured` exactly (the engine's conservation, summed as bigint); the J figures here
 * are each one rounding of those integers.
 */
export interface AttributionGroupReport {
  group: AttributedGroup;
  method: EnergyMethod;
  /** Node energy of the group in the attributed intervals, J. */
  measured: number;
  /** The app's share, J. */
  app: number;
  /** Each named consumer's share, J, in the order of AttributionReport.consumerIds. */
  consumers: number[];
  /** What else ran on the node that was named: Σ consumers = measured − app − unattributed − idle. */
  others: number;
  unattributed: number;
  idle: number;
  /** Device intervals whose energy was not measured (left out of every figure), and their length. */
  missingIntervals: number;
  missingSeconds: number;
}

export interface AttributionReport {
  idleShare: IdlePolicy;
  /** What "app" is: its process tree. */
  appIs: string;
  /** Ids of the other named consumers ("pid:42", "cgroup:/system.slice/x", "slurm:7"). */
  consumerIds: string[];
  groups: AttributionGroupReport[];
  /** Why some shares could not be told (a consumer unreadable in some interval): in unattributed. */
  notes: string[];
}

/** The report section from the run's totals; groups with no attributed device are left out. */
export function attributionReport(
  totals: ReadonlyMap<AttributedGroup, AttributionTotals>,
  sources: readonly EnergySource[],
  setup: { idleShare: IdlePolicy; app: string; appId: string; consumers: readonly string[] },
  notes: Iterable<string>,
): AttributionReport {
  const groups: AttributionGroupReport[] = [];
  for (const group of ATTRIBUTED_GROUPS) {
    const source = sources.find((s) => s.group === group);
    const t = totals.get(group);
    if (source === undefined || t === undefined) continue;
    const uj = t.microjoules();
    const consumerUj = setup.consumers.map((id) => uj.consumers.get(id) ?? 0n);
    const others = consumerUj.reduce((a, b) => a + b, 0n);
    groups.push({
      group,
      method: source.method,
      measured: microjoulesToJoules(uj.measured),
      app: microjoulesToJoules(uj.consumers.get(setup.appId) ?? 0n),
      consumers: consumerUj.map(microjoulesToJoules),
      others: microjoulesToJoules(others),
      unattributed: microjoulesToJoules(uj.unattributed),
      idle: microjoulesToJoules(uj.idle),
      missingIntervals: t.missingIntervals.count,
      missingSeconds: t.missingIntervals.seconds,
    });
  }
  return {
    idleShare: setup.idleShare,
    appIs: setup.app,
    consumerIds: [...setup.consumers],
    groups,
    notes: [...notes],
  };
}

/** Σ over groups of one figure (the app's energy over cpu, ram and gpu). */
export function attributedTotal(
  report: AttributionReport,
  pick: (g: AttributionGroupReport) => number,
): number {
  return report.groups.reduce((sum, g) => sum + pick(g), 0);
}
