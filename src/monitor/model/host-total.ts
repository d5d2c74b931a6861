import type { DeviceGroup } from '../../platform/signal-catalogue.js';
import type { HostRule, HostTotal } from './report-model.js';

/**
 * The host total rule: the host's measured energy never drops a measured group.
 *
 * A board/platform sensor (group `board`, e.g. RAPL psys) stands for the groups it covers (the
 * CPU platform: cpu and ram) only while its energy is at least theirs; otherwise it is "not
 * plausible" (a psys that is not wired stays flat) and the parts are used. Groups it does not
 * cover (discrete GPUs, anything marked outside the platform) are always added. Estimates are
 * never part of it. The report, its region calls and the live progress line all use this rule.
 */

/** One measured series' energy over the span the total is for (a round, a call, so far). */
export interface EnergyPart {
  group: DeviceGroup;
  /** Joules; NaN when unknown over this span (which makes the sum it is in unknown). */
  energy: number;
  outsidePlatform?: boolean;
}

type Bucket = 'board' | 'covered' | 'outside';
interface BucketSum {
  /** Σ energy of its parts (NaN if one is NaN). */
  energy: number;
  count: number;
  groups: DeviceGroup[];
}

function bucketOf(p: EnergyPart): Bucket {
  if (p.group === 'board') return 'board';
  return p.outsidePlatform ? 'outside' : 'covered';
}

function sums(parts: readonly EnergyPart[]): Record<Bucket, BucketSum> {
  const empty = (): BucketSum => ({ energy: 0, count: 0, groups: [] });
  const out = { board: empty(), covered: empty(), outside: empty() };
  for (const p of parts) {
    const b = out[bucketOf(p)];
    b.energy += p.energy;
    b.count++;
    if (!b.groups.includes(p.group)) b.groups.push(p.group);
  }
  return out;
}

/** A bucket's energy for the report: NaN when it has no part. */
const energyOf = (b: BucketSum) => (b.count === 0 ? Number.NaN : b.energy);

/**
 * Decides the rule for a span from its parts (see the module comment). Callers pass the series
 * that measured something over the span (a series that could not be read is not a part).
 */
export function decideHostTotal(parts: readonly EnergyPart[]): HostTotal {
  const s = sums(parts);
  const board = energyOf(s.board);
  const covered = energyOf(s.covered);
  let rule: HostRule = 'parts';
  // With nothing to compare with, a board sensor alone stands for the platform.
  if (s.board.count > 0) rule = !(covered > board) ? 'board' : 'board-not-plausible';
  return {
    rule,
    boardEnergy: board,
    coveredGroups: s.covered.groups,
    coveredEnergy: covered,
    outsideGroups: s.outside.groups,
    outsideEnergy: energyOf(s.outside),
  };
}

/**
 * Host energy of `parts` under a decided rule (a round's rule applies to its region calls and
 * the progress line uses the same): NaN when no part counts or a counted part is unknown.
 */
export function hostEnergyUnder(rule: HostRule, parts: readonly EnergyPart[]): number {
  const s = sums(parts);
  const used = rule === 'board' ? [s.board, s.outside] : [s.covered, s.outside];
  const counted = used.filter((b) => b.count > 0);
  return counted.length === 0 ? Number.NaN : counted.reduce((a, b) => a + b.energy, 0);
}

/** The rule and the host energy of a span in one step. */
export function hostTotal(parts: readonly EnergyPart[]): { energy: number; total: HostTotal } {
  const total = decideHostTotal(parts);
  return { energy: hostEnergyUnder(total.rule, parts), total };
}

const joules = (v: number) => `${Number.isFinite(v) ? v.toFixed(3) : 'n/a'} J`;
const names = (groups: readonly string[]) => groups.join(' + ');

/** The decision in words, with its figures: one line for every report. */
export function describeHostTotal(t: HostTotal): string {
  const outside =
    t.outsideGroups.length > 0
      ? `; ${names(t.outsideGroups)} ${joules(t.outsideEnergy)} added (outside the platform)`
      : '';
  if (t.rule === 'parts') {
    if (t.coveredGroups.length === 0 && t.outsideGroups.length === 0) return 'nothing measured';
    const inside = t.coveredGroups.length > 0 ? `${names(t.coveredGroups)} ${joules(t.coveredEnergy)}` : '';
    return inside ? `sum of the parts: ${inside}${outside}` : `sum of the parts${outside}`;
  }
  const parts = t.coveredGroups.length > 0 ? names(t.coveredGroups) : 'the platform';
  if (t.rule === 'board') {
    const cmp = Number.isNaN(t.coveredEnergy) ? '' : ` ≥ ${parts} ${joules(t.coveredEnergy)}`;
    return `board ${joules(t.boardEnergy)}${cmp}: board stands for ${parts}${outside}`;
  }
  return `board ${joules(t.boardEnergy)} < ${parts} ${joules(t.coveredEnergy)}: board not plausible, the parts are used${outside}`;
}
