/**
 * Turns a wrapping hardware counter (RAPL energy_uj, MSR energy/cycle counters, GPU energy
 * accumulators) into a monotone total. Pure: feed it raw readings, it never reads hardware.
 *
 * The counter counts modulo `modulus`. A reading below the previous one is a wrap only when the
 * energy it implies (raw + modulus − last) is at most half the modulus; anything smaller is a
 * counter that went backwards (firmware glitch, garbled read), which is reported and adds no
 * energy. Callers must sample faster than half a wrap period: two wraps between reads cannot be
 * told from one.
 */
export interface CounterAnomaly {
  kind: 'backwards' | 'out_of_range';
  /** The reading that was refused. */
  raw: bigint;
  /** The last accepted reading. */
  last: bigint;
  message: string;
}

export interface CounterUpdate {
  /** Monotone total in counter units (first reading + Σ wrap-corrected deltas). */
  total: bigint;
  anomaly?: CounterAnomaly;
}

export class WrappingCounter {
  readonly modulus: bigint;
  private last: bigint | undefined;
  private sum = 0n;
  /** A backwards reading held back: if the next one counts up from it, the counter was reset. */
  private suspect: bigint | undefined;
  private wraps = 0;

  /** `modulus`: number of distinct counter values (2^32 for a 32-bit field). */
  constructor(modulus: bigint | number) {
    this.modulus = BigInt(modulus);
    if (this.modulus <= 1n) throw new RangeError(`counter modulus must be > 1, got ${modulus}`);
  }

  /** Number of wraps seen so far. */
  get wrapCount(): number {
    return this.wraps;
  }

  /** Total so far, or undefined before the first accepted reading. */
  get total(): bigint | undefined {
    return this.last === undefined ? undefined : this.sum;
  }

  feed(reading: bigint | number): CounterUpdate {
    const raw = BigInt(reading);
    if (raw < 0n || raw >= this.modulus) {
      const last = this.last ?? -1n;
      return {
        total: this.sum,
        anomaly: {
          kind: 'out_of_range',
          raw,
          last,
          message: `counter reading ${raw} outside 0..${this.modulus - 1n}; ignored`,
        },
      };
    }
    if (this.last === undefined) {
      this.last = raw;
      this.sum = raw;
      return { total: this.sum };
    }
    if (raw >= this.last) {
      this.sum += raw - this.last;
      this.last = raw;
      this.suspect = undefined;
      return { total: this.sum };
    }
    const wrapped = raw + this.modulus - this.last;
    if (wrapped * 2n <= this.modulus) {
      this.sum += wrapped;
      this.last = raw;
      this.wraps++;
      this.suspect = undefined;
      return { total: this.sum };
    }
    if (this.suspect !== undefined && raw >= this.suspect) {
      // Second reading counting up from a lower base: the counter was reset. Count from there.
      this.sum += raw - this.suspect;
      this.last = raw;
      this.suspect = undefined;
      return { total: this.sum };
    }
    const anomaly: CounterAnomaly = {
      kind: 'backwards',
      raw,
      last: this.last,
      message: `counter went backwards by ${this.last - raw} (from ${this.last} to ${raw}), less than a plausible wrap; no energy counted`,
    };
    this.suspect = raw;
    return { total: this.sum, anomaly };
  }
}

/** Average power between two (energy, time) samples; NaN when either is missing or time stands still. */
export function averagePower(
  energyBefore: number,
  timeBefore: number,
  energyAfter: number,
  timeAfter: number,
): number {
  const dt = timeAfter - timeBefore;
  if (!Number.isFinite(energyBefore) || !Number.isFinite(energyAfter) || !Number.isFinite(dt) || dt <= 0) {
    return Number.NaN;
  }
  return (energyAfter - energyBefore) / dt;
}
