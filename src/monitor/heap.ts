import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Heap growth since the last collection that makes the next pause between rounds collect. */
const GROWTH_BYTES = 1024 * 1024;

let collect: (() => void) | undefined;

/** V8's full collection, which Node exposes only with --expose-gc: the flag is set for it here. */
function fullCollection(): () => void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  return collect;
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
