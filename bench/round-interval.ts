/**
 * How far one run's ratio of two daemons' percentiles could have moved had its rounds gone
 * otherwise: a paired bootstrap over rounds. Round r of each daemon ran in the same stretch of
 * machine load, so each resample draws round indices with replacement and takes every daemon's
 * rounds at those indices. Under load, a ReadSignal p99 is set by the few percent of calls that
 * a scheduler delay hits, and those come in bursts of seconds: one run's point figure looks more
 * decisive than it is (docs/geopm-side-by-side.md).
 */

import { seededRandom } from '../test/helpers/random.js';

const RESAMPLES = 1000;

/** The q-quantile as bench/shipped.ts's percentiles() takes it (no interpolation). */
function quantile(values: Float64Array, q: number): number {
  values.sort();
  return values[Math.min(values.length - 1, Math.floor(q * values.length))]!;
}

function concatRounds(rounds: number[][], picks: number[]): Float64Array {
  const out = new Float64Array(picks.reduce((n, r) => n + rounds[r]!.length, 0));
  let at = 0;
  for (const r of picks) {
    out.set(rounds[r]!, at);
    at += rounds[r]!.length;
  }
  return out;
}

/**
 * The 5th-95th percentile of quantile(a) / quantile(b) over resamples of the rounds both ran
 * (`a[r]` and `b[r]` are round r's samples); undefined with fewer than 4 paired rounds, where
 * resampling says nothing.
 */
export function quantileRatioInterval(
  a: number[][],
  b: number[][],
  q: number,
): [low: number, high: number] | undefined {
  const rounds = Math.min(a.length, b.length);
  if (rounds < 4) return undefined;
  // Seeded, so a rerun on the same samples prints the same interval.
  const next = seededRandom(rounds * 7919 + Math.round(q * 1000));
  const ratios = new Float64Array(RESAMPLES);
  for (let i = 0; i < RESAMPLES; i++) {
    const picks = Array.from({ length: rounds }, () => Math.floor(next() * rounds));
    ratios[i] = quantile(concatRounds(a, picks), q) / quantile(concatRounds(b, picks), q);
  }
  ratios.sort();
  const at = (p: number) => Number(ratios[Math.floor(p * (RESAMPLES - 1))]!.toFixed(2));
  return [at(0.05), at(0.95)];
}
