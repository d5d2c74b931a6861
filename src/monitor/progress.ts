import { RunningEnergy } from '../platform/counter-segments.js';
import { step } from '../platform/integration.js';
import type { SampleSet } from '../platform/sample-set.js';
import type { SeriesSpec } from '../platform/signal-catalogue.js';
import type { Logger, LogLevel } from './log.js';
import { type EnergyPart, hostTotal } from './model/host-total.js';

export interface ProgressOptions {
  /** Watts at full CPU load, for the estimate shown when nothing is measured. */
  fullLoadWatts?: number;
  /** `[post-processing] power_overhead`, added per second as in the report. */
  powerOverhead?: number;
}

/**
 * The live status line on a TTY: elapsed time, power since the last update and the host energy
 * so far. The energy is the report's host total (host-total.ts applied to each series' energy,
 * summed by the report's own rules one reading at a time), so the last value shown is what the
 * report says up to the last sample shown. Estimates are shown as such.
 */
export class ProgressLine {
  private readonly running: (RunningEnergy | undefined)[];
  private readonly utilIndex: number;
  private estimated = 0;
  private seen = 0;
  private firstTime = Number.NaN;
  private lastTime = Number.NaN;
  private lastDraw: { t: number; energy: number } | undefined;
  /** True while a status line is on the terminal (a log line must clear it first). */
  private shown = false;

  constructor(
    private readonly specs: readonly SeriesSpec[],
    private readonly stream: NodeJS.WritableStream,
    private readonly options: ProgressOptions = {},
  ) {
    this.running = specs.map((s) =>
      s.kind === 'energy' || s.kind === 'power' ? new RunningEnergy(s.kind) : undefined,
    );
    this.utilIndex = specs.findIndex((s) => s.group === 'cpu' && s.kind === 'util');
  }

  /** Takes the samples added since the last call and redraws at most twice a second. */
  update(data: SampleSet): void {
    const n = data.times.length;
    for (let k = this.seen; k < n; k++) this.add(data, k);
    this.seen = n;
    if (n === 0) return;
    const t = data.times[n - 1]!;
    if (this.lastDraw && t - this.lastDraw.t < 0.5) return;
    const { energy, estimated } = this.hostEnergy();
    const watts = this.lastDraw ? (energy - this.lastDraw.energy) / (t - this.lastDraw.t) : Number.NaN;
    this.lastDraw = { t, energy };
    if (!Number.isFinite(energy)) return;
    const power = Number.isFinite(watts) ? `${watts.toFixed(1)} W` : '… W';
    const tag = estimated ? ' (estimated)' : '';
    this.stream.write(
      `\r\x1b[K[joulegate] ${t.toFixed(1)} s  ${power}  ${(energy / 1000).toFixed(3)} kJ${tag}`,
    );
    this.shown = true;
  }

  /**
   * Host energy of the samples taken in so far, by the report's rule; the CPU estimate when
   * nothing is measured (NaN when there is neither).
   */
  hostEnergy(): { energy: number; estimated: boolean } {
    const parts: EnergyPart[] = [];
    this.running.forEach((r, i) => {
      if (r?.read) {
        const s = this.specs[i]!;
        const energy = r.segments > 0 ? r.energy : Number.NaN;
        parts.push({ group: s.group, energy, outsidePlatform: s.outsidePlatform === true });
      }
    });
    const elapsed = this.seen > 0 && Number.isFinite(this.firstTime) ? this.lastTime - this.firstTime : 0;
    if (parts.length > 0) {
      return {
        energy: hostTotal(parts).energy + (this.options.powerOverhead ?? 0) * elapsed,
        estimated: false,
      };
    }
    const estimate = this.options.fullLoadWatts !== undefined && this.utilIndex >= 0;
    return { energy: estimate ? this.estimated : Number.NaN, estimated: estimate };
  }

  /** Clears the status line (before a log line, and at the end of the round). */
  clear(): void {
    if (!this.shown) return;
    this.stream.write('\r\x1b[K');
    this.shown = false;
  }

  private add(data: SampleSet, k: number): void {
    const t = data.times[k]!;
    if (Number.isNaN(this.firstTime)) this.firstTime = t;
    this.running.forEach((r, i) => {
      r?.add(t, data.values[i]![k]!);
    });
    if (this.utilIndex >= 0 && this.options.fullLoadWatts !== undefined && k > 0) {
      // The report's estimate: each utilisation reading (percent) covers the interval before it.
      const watts = (data.values[this.utilIndex]![k]! / 100) * this.options.fullLoadWatts;
      const joules = step(data.times[k - 1]!, t, watts);
      if (!Number.isNaN(joules)) this.estimated += joules;
    }
    this.lastTime = t;
  }
}

/**
 * A logger whose lines never land on the progress line: the line shown (if any) is cleared
 * first, so each message starts on a line of its own; the next update redraws the status.
 */
export function clearingProgress(log: Logger, progress: () => ProgressLine | undefined): Logger {
  const around =
    (level: LogLevel, write: (m: string) => void) =>
    (m: string): void => {
      if (log.enabled(level)) progress()?.clear();
      write(m);
    };
  return {
    debug: around('DEBUG', (m) => log.debug(m)),
    info: around('INFO', (m) => log.info(m)),
    warning: around('WARNING', (m) => log.warning(m)),
    error: around('ERROR', (m) => log.error(m)),
    enabled: (level) => log.enabled(level),
  };
}
