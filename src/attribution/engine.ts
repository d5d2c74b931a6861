import type { DomainType } from '../platform/domains.js';
import { InvalidArgumentError } from '../platform/errors.js';

/**
 * The attribution engine: splits one interval's measured energy of one device among the
 * consumers that used it. Pure arithmetic, no I/O (docs/attribution.md states the model).
 *
 * Arithmetic is in integer microjoules. The measured ΔE is quantised once to 1 µJ (the
 * resolution of RAPL's energy_uj; NVML counts whole mJ), and every split hands out whole µJ with
 * the largest-remainder rule, so Σ consumers + unattributed + idle equals the quantised ΔE
 * exactly — in any order of summation — and each share is within 1 µJ of its exact value.
 * Joules are derived for display only (µJ / 1e6).
 */

/** What a device counter measures. */
export type DeviceKind = 'package' | 'core' | 'dram' | 'gpu';

/**
 * What becomes of the idle (static) part of a device's energy:
 * - `none`: kept apart as "idle";
 * - `cpu-time`: split by the same weights as the dynamic part (its "other" share goes to
 *   unattributed);
 * - `equal`: split equally among the known consumers that used the device in the interval.
 * With no usage at all in an interval, idle stays "idle" under every policy.
 */
export type IdlePolicy = 'none' | 'cpu-time' | 'equal';
export const IDLE_POLICIES: readonly IdlePolicy[] = ['none', 'cpu-time', 'equal'];

/** A device: what it measures and where it sits in the topology (RAPL package 1: package/Package/1). */
export interface DeviceRef {
  kind: DeviceKind;
  domain: DomainType;
  index: number;
}

export interface ConsumerUsage {
  id: string;
  /**
   * Use of this device in the interval, in the device's usage unit (CPU µs on the device's CPUs;
   * GPU utilisation·seconds, or 1 for the owner of a whole GPU). NaN: could not be read.
   */
  usage: number;
  /** Why `usage` is NaN. */
  reason?: string;
}

export interface IntervalInput {
  device: DeviceRef;
  /** Wrap-corrected ΔE of the device in the interval, J. NaN: not measured in this interval. */
  energyJ: number;
  durationS: number;
  /** Power of the device at zero load, W (measured or configured); undefined: no idle model. */
  idlePowerW?: number;
  idlePolicy: IdlePolicy;
  consumers: readonly ConsumerUsage[];
  /**
   * Use of the device by everything that ran on it (known consumers included), same unit as
   * `usage`: the busy time of the device's CPUs from /proc/stat, or a GPU's utilisation·s.
   * What known consumers do not cover is "other" and its energy is unattributed. Undefined or
   * NaN: unknown, and the known consumers share all the dynamic energy (`otherKnown` false).
   */
  deviceUsage?: number;
}

export interface ConsumerShare {
  id: string;
  /** dynamicUj + idleUj. */
  uj: number;
  dynamicUj: number;
  idleUj: number;
}

export interface MeasuredShares {
  status: 'ok';
  device: DeviceRef;
  durationS: number;
  /** ΔE quantised to 1 µJ: Σ consumers.uj + unattributedUj + idleUj === measuredUj. */
  measuredUj: number;
  consumers: ConsumerShare[];
  /** Consumers whose usage could not be read; their energy is inside unattributed. */
  unknown: { id: string; reason: string }[];
  /** Energy of no known consumer: dynamic energy of "other" or of an unused device (+ its idle share under cpu-time). */
  unattributedUj: number;
  /** Idle energy not handed to consumers by the policy. */
  idleUj: number;
  /** False when the device's total usage was unknown, so "other" could not be told apart. */
  otherKnown: boolean;
}

export interface MissingShares {
  status: 'missing';
  device: DeviceRef;
  durationS: number;
  reason: string;
}

export type IntervalShares = MeasuredShares | MissingShares;

export const MICROJOULES_PER_JOULE = 1e6;

/** J → whole µJ (the engine's unit). */
export function toMicrojoules(joules: number): number {
  return Math.round(joules * MICROJOULES_PER_JOULE);
}

/**
 * Splits `total` (a non-negative safe integer) by `weights` (finite, ≥ 0, some > 0) into
 * integers that sum to `total` exactly, each within 1 of total·w/Σw (largest remainder; ties go
 * to the earlier entry). Zero weights get 0.
 */
export function splitByWeights(total: number, weights: readonly number[]): number[] {
  let sum = 0;
  for (const w of weights) sum += w;
  if (!(sum > 0)) throw new InvalidArgumentError('splitByWeights: no positive weight');
  const parts = new Array<number>(weights.length).fill(0);
  const remainders: { index: number; fraction: number }[] = [];
  let handed = 0;
  weights.forEach((w, index) => {
    if (w <= 0) return;
    const exact = (total * w) / sum;
    const whole = Math.min(total, Math.floor(exact));
    parts[index] = whole;
    handed += whole;
    remainders.push({ index, fraction: exact - whole });
  });
  // Float rounding of total·w/Σw can put `left` one unit off either way; it is settled here.
  let left = total - handed;
  remainders.sort((a, b) => b.fraction - a.fraction || a.index - b.index);
  for (let k = 0; left > 0; k = (k + 1) % remainders.length, left--) parts[remainders[k]!.index]!++;
  for (let k = remainders.length - 1; left < 0; k = (k - 1 + remainders.length) % remainders.length) {
    const i = remainders[k]!.index;
    if (parts[i]! > 0) {
      parts[i]!--;
      left++;
    }
  }
  return parts;
}

function validate(input: IntervalInput): void {
  const where = `${input.device.kind} ${input.device.index}`;
  if (input.energyJ < 0) {
    throw new InvalidArgumentError(
      `${where}: energy ${input.energyJ} J is negative (counters must be wrap-corrected)`,
    );
  }
  if (Number.isFinite(input.energyJ) && toMicrojoules(input.energyJ) > Number.MAX_SAFE_INTEGER) {
    throw new InvalidArgumentError(`${where}: energy ${input.energyJ} J is too large for one interval`);
  }
  if (!(input.durationS > 0) || !Number.isFinite(input.durationS)) {
    throw new InvalidArgumentError(`${where}: interval duration ${input.durationS} s must be positive`);
  }
  const idle = input.idlePowerW;
  if (idle !== undefined && !(idle >= 0 && Number.isFinite(idle))) {
    throw new InvalidArgumentError(`${where}: idle power ${idle} W must be a finite number ≥ 0`);
  }
  if (!IDLE_POLICIES.includes(input.idlePolicy)) {
    throw new InvalidArgumentError(
      `${where}: idle policy "${input.idlePolicy}" is not one of ${IDLE_POLICIES.join(', ')}`,
    );
  }
  if (input.deviceUsage !== undefined && input.deviceUsage < 0) {
    throw new InvalidArgumentError(`${where}: device usage ${input.deviceUsage} is negative`);
  }
  const seen = new Set<string>();
  for (const c of input.consumers) {
    if (seen.has(c.id)) throw new InvalidArgumentError(`${where}: consumer "${c.id}" given twice`);
    seen.add(c.id);
    if (c.usage < 0 || c.usage === Number.POSITIVE_INFINITY) {
      throw new InvalidArgumentError(`${where}: consumer "${c.id}" usage ${c.usage} is not ≥ 0`);
    }
  }
}

/** Splits one interval of one device. Throws InvalidArgumentError on impossible input. */
export function attributeInterval(input: IntervalInput): IntervalShares {
  validate(input);
  const { device, durationS } = input;
  if (Number.isNaN(input.energyJ)) {
    return { status: 'missing', device, durationS, reason: 'device energy not measured in this interval' };
  }
  const measuredUj = toMicrojoules(input.energyJ);
  const idleModelUj = input.idlePowerW === undefined ? 0 : toMicrojoules(input.idlePowerW * durationS);
  // A device below its idle model in this interval: all of it is idle, none dynamic.
  const idleUj = Math.min(measuredUj, idleModelUj);
  const dynamicUj = measuredUj - idleUj;

  const known = input.consumers.filter((c) => !Number.isNaN(c.usage));
  const unknown = input.consumers
    .filter((c) => Number.isNaN(c.usage))
    .map((c) => ({ id: c.id, reason: c.reason ?? 'usage not read' }));
  const knownUsage = known.reduce((sum, c) => sum + c.usage, 0);
  const otherKnown = input.deviceUsage !== undefined && Number.isFinite(input.deviceUsage);
  // /proc/stat ticks are coarser than cgroup µs: consumers may slightly exceed the device total.
  const otherUsage = otherKnown ? Math.max(0, input.deviceUsage! - knownUsage) : 0;
  const weights = [...known.map((c) => c.usage), otherUsage];
  const used = knownUsage + otherUsage > 0;

  const dynamic = used ? splitByWeights(dynamicUj, weights) : [...known.map(() => 0), dynamicUj];
  let idleShares = known.map(() => 0);
  let idleToOther = 0;
  let idleKept = idleUj;
  if (idleUj > 0 && used && input.idlePolicy === 'cpu-time') {
    const split = splitByWeights(idleUj, weights);
    idleShares = split.slice(0, known.length);
    idleToOther = split[known.length]!;
    idleKept = 0;
  } else if (idleUj > 0 && input.idlePolicy === 'equal' && known.some((c) => c.usage > 0)) {
    idleShares = splitByWeights(
      idleUj,
      known.map((c) => (c.usage > 0 ? 1 : 0)),
    );
    idleKept = 0;
  }
  return {
    status: 'ok',
    device,
    durationS,
    measuredUj,
    consumers: known.map((c, i) => ({
      id: c.id,
      uj: dynamic[i]! + idleShares[i]!,
      dynamicUj: dynamic[i]!,
      idleUj: idleShares[i]!,
    })),
    unknown,
    unattributedUj: dynamic[known.length]! + idleToOther,
    idleUj: idleKept,
    otherKnown,
  };
}
