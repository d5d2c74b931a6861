/**
 * How a batch server's native sampling loop (src/batch/native-loop.c, docs/batch.md) reads one
 * pushed signal without JavaScript. A backend states it per pushed handle where its JavaScript
 * read is exactly one of these; anything else (rates, counters that need wrap state, libraries)
 * has none and keeps the batch in the JavaScript loop.
 */
export type NativeRead =
  /** Seconds on CLOCK_MONOTONIC since `originNs` (TIME). */
  | { kind: 'clock'; originNs: bigint }
  /**
   * One decimal integer in a kernel file, times `scale`: the file is re-read with one pread at
   * offset 0 per sample. Content that is not one plain integer goes back to the backend's own
   * read for that sample, which parses or reports it.
   */
  | { kind: 'decimal-file'; path: string; scale: number }
  /** A value fixed for the life of the batch (read once at setup). */
  | { kind: 'constant'; value: number };

/** A pushed PlatformIO signal as native reads: one per native index, combined by `aggregation`. */
export interface NativeSignal {
  aggregation: number;
  reads: NativeRead[];
}
