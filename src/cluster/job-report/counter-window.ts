/**
 * The energy of one Prometheus counter series over a time window, from its raw samples, with the
 * gaps stated. The job report reads raw samples (a range selector) instead of asking for
 * increase(): increase() extrapolates to the window's ends and hides where samples are missing,
 * while the job report must say where its figures have holes (docs/exporter.md).
 *
 * Rules:
 * - Counter restarts follow Prometheus: a sample below the previous one means the counter
 *   restarted from 0, so the new value is the energy since the restart. What the node used
 *   between the previous sample and the restart is unknown: that segment is a `restart` gap.
 * - Samples further apart than 1.5 × the scrape interval (missed scrapes) without a restart are a
 *   `bridged` gap: the counter kept counting, so the energy across it is exact; it is stated all
 *   the same.
 * - The window's ends fall between samples: energy there is interpolated linearly within the
 *   segment that holds them. A window end with no sample on its far side is a `no-data` gap.
 * Missing data is never zero energy: `coveredS` says how much of the window the energy covers.
 */
export interface CounterSample {
  /** Unix seconds. */
  t: number;
  v: number;
}

export type GapKind = 'no-data' | 'restart' | 'bridged';

export interface Gap {
  kind: GapKind;
  /** Unix seconds, clipped to the window. */
  start: number;
  end: number;
}

export interface WindowEnergy {
  /** Joules counted in the window (NaN when no sample falls in or around it). */
  joules: number;
  /** Seconds of the window whose energy is known (the window minus no-data and restart gaps). */
  coveredS: number;
  gaps: Gap[];
  samples: number;
}

/** The scrape interval of a series: the median spacing of its samples (undefined below 2). */
export function medianSpacing(samples: readonly CounterSample[]): number | undefined {
  const d: number[] = [];
  for (let i = 1; i < samples.length; i++) d.push(samples[i]!.t - samples[i - 1]!.t);
  if (d.length === 0) return undefined;
  d.sort((a, b) => a - b);
  return d[Math.floor((d.length - 1) / 2)];
}

/** Missed scrapes: samples further apart than this many intervals. */
export const GAP_FACTOR = 1.5;

/** Length of the overlap of [a0, a1] and [b0, b1]. */
const overlap = (a0: number, a1: number, b0: number, b1: number) =>
  Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

/**
 * Energy of a counter in [start, end] from samples sorted by time (they may reach beyond the
 * window on both sides: the query asks for some margin so the ends can be interpolated).
 * `intervalS`: the scrape interval; default: the samples' median spacing.
 */
export function counterWindowEnergy(
  samples: readonly CounterSample[],
  start: number,
  end: number,
  intervalS?: number,
): WindowEnergy {
  const windowS = end - start;
  const interval = intervalS ?? medianSpacing(samples);
  const gaps: Gap[] = [];
  const inWindow = samples.filter((s) => s.t >= start && s.t <= end).length;
  if (samples.length < 2 || interval === undefined) {
    return {
      joules: Number.NaN,
      coveredS: 0,
      gaps: [{ kind: 'no-data', start, end }],
      samples: inWindow,
    };
  }
  let joules = 0;
  let uncoveredS = 0;
  const first = samples[0]!.t;
  const last = samples.at(-1)!.t;
  if (first > start) {
    gaps.push({ kind: 'no-data', start, end: Math.min(first, end) });
    uncoveredS += Math.min(first, end) - start;
  }
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    const dt = b.t - a.t;
    const inside = overlap(a.t, b.t, start, end);
    if (!(dt > 0) || inside === 0) continue;
    const restarted = b.v < a.v;
    const increase = restarted ? b.v : b.v - a.v;
    joules += (increase * inside) / dt;
    const clipped = { start: Math.max(a.t, start), end: Math.min(b.t, end) };
    if (restarted) {
      gaps.push({ kind: 'restart', ...clipped });
      uncoveredS += inside;
    } else if (dt > GAP_FACTOR * interval) {
      gaps.push({ kind: 'bridged', ...clipped });
    }
  }
  if (last < end) {
    gaps.push({ kind: 'no-data', start: Math.max(last, start), end });
    uncoveredS += end - Math.max(last, start);
  }
  return { joules, coveredS: Math.max(0, windowS - uncoveredS), gaps, samples: inWindow };
}
