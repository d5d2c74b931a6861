import { errorMessage } from '../../platform/errors.js';

/*
 * AMD energy counters are unreliable on some parts (wrong rate, frozen values, values going
 * backwards: ROCm/amdsmi #38, #22, #115). At setup each device's counter is compared with its
 * integrated socket power over a short window; where they disagree, GPU_ENERGY is derived by
 * integrating power instead.
 */

/** Length of the setup check window, seconds. */
export const CHECK_SECONDS = 0.5;
/** Power samples taken across the window (trapezoidal rule between them). */
export const CHECK_SAMPLES = 6;
/** The counter is trusted when |ΔE_counter − ∫P dt| ≤ max(25 % of ∫P dt, 2 J). */
export const RELATIVE_TOLERANCE = 0.25;
export const ABSOLUTE_TOLERANCE_J = 2;

/** Outcome of the setup check for one device (shown in metadata). */
export interface EnergyCheck {
  trusted: boolean;
  seconds: number;
  counterJoules: number;
  integratedJoules: number;
  reason: string;
}

/** Where an integrator starts: the last power sample of the check and the energy so far. */
export interface IntegratorStart {
  time: number;
  power: number;
  joules: number;
}

export interface EnergyReaders<D> {
  /** Watts. */
  power(dev: D): number;
  /** Counter value in µJ. */
  energyMicrojoules(dev: D): number;
}

const now = () => performance.now() / 1000;
const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

/** Trapezoidal integral of (time s, power W) samples, joules. */
export function integratePower(samples: readonly { time: number; power: number }[]): number {
  let joules = 0;
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    joules += ((a.power + b.power) / 2) * (b.time - a.time);
  }
  return joules;
}

/** Whether a counter delta agrees with integrated power within the documented tolerance. */
export function counterAgrees(counterJoules: number, integratedJoules: number): boolean {
  if (!Number.isFinite(counterJoules) || counterJoules < 0) return false;
  const tolerance = Math.max(RELATIVE_TOLERANCE * Math.abs(integratedJoules), ABSOLUTE_TOLERANCE_J);
  return Math.abs(counterJoules - integratedJoules) <= tolerance;
}

/** Checks every device's counter against its integrated power over one shared window. */
export async function checkEnergyCounters<D>(
  devices: readonly D[],
  read: EnergyReaders<D>,
  window = CHECK_SECONDS,
): Promise<{ check: EnergyCheck; start: IntegratorStart }[]> {
  const tryRead = (f: () => number): number | Error => {
    try {
      return f();
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    }
  };
  const first = devices.map((d) => tryRead(() => read.energyMicrojoules(d)));
  const samples = devices.map(() => [] as { time: number; power: number }[]);
  for (let i = 0; i < CHECK_SAMPLES; i++) {
    if (i > 0) await sleep(window / (CHECK_SAMPLES - 1));
    devices.forEach((d, k) => {
      const p = tryRead(() => read.power(d));
      if (typeof p === 'number') samples[k]!.push({ time: now(), power: p });
    });
  }
  const last = devices.map((d) => tryRead(() => read.energyMicrojoules(d)));
  return devices.map((_, k) => {
    const s = samples[k]!;
    const integratedJoules = integratePower(s);
    const seconds = s.length > 1 ? s[s.length - 1]!.time - s[0]!.time : 0;
    const e0 = first[k]!;
    const e1 = last[k]!;
    const counterJoules = typeof e0 === 'number' && typeof e1 === 'number' ? (e1 - e0) * 1e-6 : Number.NaN;
    let reason: string;
    let trusted = false;
    if (e0 instanceof Error || e1 instanceof Error)
      reason = `counter unreadable: ${errorMessage(e0 instanceof Error ? e0 : e1)}`;
    else if (s.length < 2) reason = 'power unreadable, counter used unchecked';
    else {
      trusted = counterAgrees(counterJoules, integratedJoules);
      reason = trusted ? 'counter agrees with integrated power' : 'counter disagrees with integrated power';
    }
    // Without power samples there is nothing to integrate: keep the counter.
    if (s.length < 2 && typeof e0 === 'number') trusted = true;
    const tail = s[s.length - 1];
    return {
      check: { trusted, seconds, counterJoules, integratedJoules, reason },
      start: { time: tail?.time ?? now(), power: tail?.power ?? 0, joules: integratedJoules },
    };
  });
}

/** Energy as the running trapezoidal integral of power, sampled at each read. */
export class PowerIntegrator {
  private time: number;
  private power: number;
  private joules: number;

  constructor(
    private readonly readPower: () => number,
    start: IntegratorStart,
  ) {
    this.time = start.time;
    this.power = start.power;
    this.joules = start.joules;
  }

  /** Samples power now and returns the energy so far, joules. */
  advance(): number {
    const power = this.readPower();
    const time = now();
    this.joules += ((this.power + power) / 2) * (time - this.time);
    this.time = time;
    this.power = power;
    return this.joules;
  }
}
