import { errorMessage } from '../../platform/errors.js';
import { covered, RunningIntegral, total, trapezoidSegments } from '../../platform/integration.js';

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

/** Where an integrator starts: the last good power sample of the check (NaN: none) and the energy so far. */
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
  const times: number[] = [];
  const watts = devices.map(() => [] as number[]);
  for (let i = 0; i < CHECK_SAMPLES; i++) {
    if (i > 0) await sleep(window / (CHECK_SAMPLES - 1));
    times.push(now());
    // A power read that fails is a gap in the integral, never 0 W.
    devices.forEach((d, k) => {
      const p = tryRead(() => read.power(d));
      watts[k]!.push(typeof p === 'number' ? p : Number.NaN);
    });
  }
  const last = devices.map((d) => tryRead(() => read.energyMicrojoules(d)));
  return devices.map((_, k) => {
    const segments = trapezoidSegments(times, watts[k]!);
    const integrated = segments.length > 0;
    const integratedJoules = integrated ? total(segments) : Number.NaN;
    const seconds = covered(segments);
    const e0 = first[k]!;
    const e1 = last[k]!;
    const counterJoules = typeof e0 === 'number' && typeof e1 === 'number' ? (e1 - e0) * 1e-6 : Number.NaN;
    let reason: string;
    let trusted = false;
    if (e0 instanceof Error || e1 instanceof Error)
      reason = `counter unreadable: ${errorMessage(e0 instanceof Error ? e0 : e1)}`;
    else if (!integrated) reason = 'power unreadable, counter used unchecked';
    else {
      trusted = counterAgrees(counterJoules, integratedJoules);
      reason = trusted ? 'counter agrees with integrated power' : 'counter disagrees with integrated power';
    }
    // Without power samples there is nothing to integrate: keep the counter.
    if (!integrated && typeof e0 === 'number') trusted = true;
    const lastGood = watts[k]!.findLastIndex(Number.isFinite);
    return {
      check: { trusted, seconds, counterJoules, integratedJoules, reason },
      // The integrated counter starts where the check ended (0 J when it integrated nothing:
      // a counter's origin is arbitrary, its increments are what count).
      start: {
        time: lastGood >= 0 ? times[lastGood]! : now(),
        power: lastGood >= 0 ? watts[k]![lastGood]! : Number.NaN,
        joules: integrated ? integratedJoules : 0,
      },
    };
  });
}

/**
 * Energy as the running trapezoidal integral of power, sampled at each read. A failed power
 * read gives NaN for that read; the integral then spans the gap (platform/integration.ts).
 */
export class PowerIntegrator {
  private readonly integral: RunningIntegral;

  constructor(
    private readonly readPower: () => number,
    start: IntegratorStart,
  ) {
    this.integral = new RunningIntegral({ time: start.time, value: start.power, amount: start.joules });
  }

  /** Samples power now and returns the energy so far, joules. */
  advance(): number {
    const power = this.readPower();
    return this.integral.add(now(), power);
  }
}
