import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../../platform/atomic-file.js';
import { errorMessage } from '../../platform/errors.js';

/*
 * The exporter's energy counters across its own restarts (docs/exporter.md, "Restarts"): after
 * every reading each counter's last source value and published total are kept in one file of the
 * state directory; a restart on the same boot of the same node continues each counter from its
 * total plus what its source advanced meanwhile. After a reboot, or with a file that is not
 * this node's, counting starts over, which Prometheus sees as a counter reset.
 */

/** One counter as saved: the source signal, its last reading, the total published then. */
export interface SavedCounter {
  signal: string;
  last: number;
  total: number;
}

const finite = z.number().refine(Number.isFinite, 'not a finite number');
const STATE_SCHEMA = z.object({
  format: z.literal(1),
  node: z.string(),
  bootId: z.string(),
  counters: z
    .record(z.string(), z.object({ signal: z.string(), last: finite, total: finite.min(0) }))
    .refine((c) => Object.keys(c).length <= 10_000, 'too many counters'),
});
export type CounterState = z.infer<typeof STATE_SCHEMA>;

/** The state file's name in the state directory. */
export const STATE_FILE = 'exporter-counters.json';
/** A state file larger than this is not ours (a node has tens of counters). */
const STATE_MAX_BYTES = 1 << 20;

/** The key of one series' counter: metric and device index. */
export function counterKey(metric: string, index: number): string {
  return `${metric}/${index}`;
}

/**
 * How far a source advanced between its last reading in an earlier process and the first in
 * this one; undefined when that cannot be known. A source reading at least its old value
 * advanced by the difference. One that reads lower restarted from its raw hardware value, which
 * lies below `range`: if the range is known, the advance is the raw counter's step modulo the
 * range (exact while the outage is shorter than one wrap); if not, it is unknown.
 */
export function advanceAcrossRestart(
  last: number,
  now: number,
  range: number | undefined,
): number | undefined {
  if (now >= last) return now - last;
  if (range === undefined || !(range > 0) || now >= range) return undefined;
  const raw = last % range;
  return now >= raw ? now - raw : now + range - raw;
}

/** Parses a state file's text; one clear error for anything that is not a valid state. */
export function parseCounterState(text: string): CounterState {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error('not JSON');
  }
  const parsed = STATE_SCHEMA.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${issue.path.join('.') || 'top level'}: ${issue.message}`);
  }
  return parsed.data;
}

/** Reads and writes the state file of one exporter: the counters to resume, then each reading's. */
export class CounterStateStore {
  private readonly path: string;
  private writeProblem: string | undefined;

  constructor(
    dir: string,
    private readonly node: string,
    /** This boot's id (/proc/sys/kernel/random/boot_id); undefined: never resume, never save. */
    private readonly bootId: string | undefined,
    private readonly log: (line: string) => void,
  ) {
    this.path = join(dir, STATE_FILE);
    if (bootId === undefined) return;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      this.writeProblem = errorMessage(err);
      log(`counters will start from 0 at each exporter start: cannot make ${dir}: ${this.writeProblem}`);
    }
  }

  /** The saved counters this start may resume (empty after a reboot, or for a foreign file). */
  load(): Map<string, SavedCounter> {
    if (this.bootId === undefined) {
      this.log('counters start from 0: this boot has no id (/proc/sys/kernel/random/boot_id)');
      return new Map();
    }
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.log(`${this.path} not read (${errorMessage(err)}); counters start from 0`);
      return new Map();
    }
    let state: CounterState;
    try {
      if (text.length > STATE_MAX_BYTES) throw new Error(`larger than ${STATE_MAX_BYTES} bytes`);
      state = parseCounterState(text);
    } catch (err) {
      this.log(`${this.path} ignored, not a counter state (${errorMessage(err)}); counters start from 0`);
      return new Map();
    }
    if (state.node !== this.node) {
      this.log(`${this.path} ignored: it is node ${JSON.stringify(state.node)}'s; counters start from 0`);
      return new Map();
    }
    if (state.bootId !== this.bootId) {
      this.log(`${this.path} is from an earlier boot: counters start from 0`);
      return new Map();
    }
    return new Map(Object.entries(state.counters));
  }

  /** Saves the counters of one reading; a failure is logged once, and serving goes on. */
  save(counters: ReadonlyMap<string, SavedCounter>): void {
    if (this.bootId === undefined || this.writeProblem !== undefined) return;
    const state: CounterState = {
      format: 1,
      node: this.node,
      bootId: this.bootId,
      counters: Object.fromEntries(counters),
    };
    try {
      writeFileAtomic(this.path, `${JSON.stringify(state)}\n`, 0o600);
    } catch (err) {
      this.writeProblem = errorMessage(err);
      this.log(
        `cannot save counters to ${this.path} (${this.writeProblem}); a restart will start them from 0`,
      );
    }
  }
}
