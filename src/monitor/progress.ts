import { step, trapezoid } from '../platform/integration.js';
import type { SampleSet } from './sampler.js';
import type { SeriesSpec } from './signals.js';

/**
 * The live status line on a TTY: elapsed time, power over the last interval and energy so far,
 * from energy counters (ΔE/Δt) and power readings. Estimates are shown as such.
 */
export class ProgressLine {
  private energy = 0;
  private lastDraw = 0;
  private seen = 0;

  constructor(
    private readonly specs: readonly SeriesSpec[],
    private readonly stream: NodeJS.WriteStream,
    private readonly fullLoadWatts?: number,
  ) {}

  update(data: SampleSet): void {
    const n = data.times.length;
    for (let k = Math.max(1, this.seen); k < n; k++) this.energy += this.intervalEnergy(data, k);
    this.seen = n;
    if (n < 2 || data.times[n - 1]! - this.lastDraw < 0.5) return;
    this.lastDraw = data.times[n - 1]!;
    const dt = data.times[n - 1]! - data.times[n - 2]!;
    const watts = this.intervalEnergy(data, n - 1) / dt;
    const tag = this.measured() ? '' : ' (estimated)';
    this.stream.write(
      `\r\x1b[K[joulegate] ${data.times[n - 1]!.toFixed(1)} s  ${watts.toFixed(1)} W  ${(this.energy / 1000).toFixed(3)} kJ${tag}`,
    );
  }

  clear(): void {
    this.stream.write('\r\x1b[K');
  }

  private measured(): boolean {
    return this.specs.some((s) => s.kind === 'energy' || s.kind === 'power');
  }

  /** Joules in the interval ending at sample k; intervals next to a gap add nothing. */
  private intervalEnergy(data: SampleSet, k: number): number {
    const t0 = data.times[k - 1]!;
    const t1 = data.times[k]!;
    const estimate = !this.measured() && this.fullLoadWatts;
    let e = 0;
    this.specs.forEach((s, i) => {
      if (s.group === 'board') return;
      const a = data.values[i]![k - 1]!;
      const b = data.values[i]![k]!;
      let joules = Number.NaN;
      if (s.kind === 'energy' && Number.isFinite(a)) joules = Math.max(0, b - a);
      else if (s.kind === 'power') joules = trapezoid(t0, a, t1, b);
      else if (estimate && s.kind === 'util' && s.group === 'cpu') joules = step(t0, t1, b) * estimate;
      if (Number.isFinite(joules)) e += joules;
    });
    return e;
  }
}
