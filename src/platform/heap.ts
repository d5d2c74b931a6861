import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Heap growth since the last collection that makes the next pause between rounds collect. */
const GROWTH_BYTES = 1024 * 1024;

let collect: (() => void) | undefined;

/** V8's full collection, which Node exposes only with --expose-gc: the flag is set for it here. */
export function fullCollection(): () => void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  return collect;
}

/**
 * Stops V8's optimising compiler (TurboFan) for the rest of this process. Over thousands of
 * rounds it compiled more and more of the round loop, and its code, compiler memory and the
 * pages of its own machine code raised the resident size by ~11 MB (49 → 63 MB over 3,000
 * rounds of `true`, measured with VmHWM); without it the size stays within ~1 MB. The monitor
 * spends its time waiting for the app, so the cost is CPU per sample only: a readBatch of 256
 * CPUs' procfs/cpufreq files takes ~3 ms instead of ~2 ms (bench/sampler.ts), at most a few
 * per second. Only the monitor command calls this; the daemon and batch server keep TurboFan.
 */
export function preferSmallFootprint(): void {
  setFlagsFromString('--no-opt');
}

/**
 * Keeps the monitor's memory flat over any number of rounds. Each round leaves a little garbage
 * (the app's process handle, its samples once summarised); V8 collects its old generation only
 * after the heap has grown several times over, so over thousands of rounds the resident size
 * kept rising (to ~100 MB where the live data is ~9 MB). Between rounds nothing is sampled: a
 * full collection there, once the heap has grown by GROWTH_BYTES, costs no measurement a pause.
 */
export class HeapKeeper {
  private baseline = getHeapStatistics().used_heap_size;

  /** Call between rounds. */
  betweenRounds(): void {
    if (getHeapStatistics().used_heap_size - this.baseline < GROWTH_BYTES) return;
    fullCollection()();
    this.baseline = getHeapStatistics().used_heap_size;
  }
}

/**
 * Collects a long-lived server's garbage soon after it piles up: every `everyMs`, a full
 * collection if the heap and array buffers grew by `growthBytes` since the last one. A client
 * may send call after call at the per-call caps, each decoded into megabytes that are garbage
 * once answered; V8 collects its old generation only after it has grown several times over, so
 * the resident size rose by tens of MB and stayed there. A collection of a small heap takes a
 * few ms, and only a flood of large calls triggers one.
 */
export function collectWhenGrown(growthBytes: number, everyMs: number): NodeJS.Timeout {
  const used = () => {
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  let baseline = used();
  const timer = setInterval(() => {
    if (used() - baseline < growthBytes) return;
    fullCollection()();
    baseline = used();
  }, everyMs);
  timer.unref();
  return timer;
}
