import { closeSync, openSync, readSync } from 'node:fs';
import { parseProcessStat } from '../attribution/proc-stat.js';
import { currentCpu, moveCurrentThreadTo } from '../platform/cpu-affinity.js';
import { errorMessage } from '../platform/errors.js';

/**
 * Samples a server answers between two looks at where it runs: at 1 kHz a fifth of a second. A
 * look is one pread of the client's /proc stat file and a vDSO call (in the native loop, in C):
 * per sample nothing to speak of.
 */
export const SAMPLES_BETWEEN_LOOKS = 200;
/**
 * Most samples between looks. A look that cannot move the server (a CPU its mask does not
 * allow), or a move the kernel undid by the next look, doubles the interval up to this; a move
 * that held sets it back.
 */
export const MOST_SAMPLES_BETWEEN_LOOKS = 51_200;

/** What a look did. */
export type Look = 'together' | 'moved' | 'not allowed' | 'unknown';

/** Longer than any /proc/<pid>/stat line (52 fields of at most 20 digits, a 64-byte name). */
const STAT_BYTES = 2048;

/**
 * Keeps a batch server's serving thread on the CPU its client's main thread last ran on.
 *
 * Client and server take turns (request, answer), so one CPU can run both: each wakes the
 * other where it already is, with no cross-CPU wake-up (an inter-processor interrupt, a cold
 * cache; 2–3× the server's CPU per sample, docs/batch.md). On a node whose CPUs are all busy
 * the kernel moves neither of two such tasks once they are apart, so where a spare server
 * last ran decided for a whole session. The server therefore moves itself next to its client
 * at the first request and whenever a look finds them apart; its CPU mask stays as the admin
 * set it, and on an idle node the kernel still spreads them as it likes.
 *
 * The CPU is that of the client's main thread (the pid the batch is keyed by), which is the one
 * that talks to the server in GEOPM's clients and joulegate's own.
 */
export class ClientPlacement {
  /** Times this server moved next to its client. */
  moves = 0;
  /** Samples between looks now (see MOST_SAMPLES_BETWEEN_LOOKS). */
  samplesBetweenLooks = SAMPLES_BETWEEN_LOOKS;
  private failed = false;
  private lastLook: Look = 'together';
  /**
   * The client's stat file, open from the first look: it stays the file of that process (a
   * read after the process is gone fails; a later process given the pid is never read).
   */
  private stat?: { fd: number; path: string; buffer: Buffer };

  constructor(
    private readonly clientPid: number,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Moves the calling thread to the client's CPU when it runs elsewhere, and sets the interval
   * to the next look from what this one did. `answeredSince`: samples answered since the last
   * call (the native loop looks on its own and comes back only when they are apart: more than
   * one interval since means the last move held at least one look).
   */
  follow(answeredSince = 0): Look {
    const look = this.look();
    const lastHeld = this.lastLook !== 'moved' || answeredSince > this.samplesBetweenLooks;
    const held = look === 'together' || (look === 'moved' && lastHeld);
    this.samplesBetweenLooks = held
      ? SAMPLES_BETWEEN_LOOKS
      : Math.min(this.samplesBetweenLooks * 2, MOST_SAMPLES_BETWEEN_LOOKS);
    this.lastLook = look;
    return look;
  }

  /** The native loop's looks: the client's open stat file (-1: none) and their interval. */
  get nativeLooks(): { stat: number; every: number } {
    return { stat: this.stat?.fd ?? -1, every: this.samplesBetweenLooks };
  }

  private look(): Look {
    if (this.failed) return 'unknown';
    try {
      if (!this.stat) {
        const path = `/proc/${this.clientPid}/stat`;
        this.stat = { fd: openSync(path, 'r'), path, buffer: Buffer.alloc(STAT_BYTES) };
      }
      const { fd, path, buffer } = this.stat;
      const length = readSync(fd, buffer, 0, buffer.length, 0);
      const cpu = parseProcessStat(buffer.toString('latin1', 0, length), path).processor;
      if (cpu === currentCpu()) return 'together';
      const moved = moveCurrentThreadTo(cpu);
      if (moved === 'moved') this.moves++;
      return moved;
    } catch (err) {
      // The client is gone (its end comes next), or /proc or the calls are refused: the server
      // runs where the kernel puts it, and says so once.
      this.failed = true;
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ESRCH')
        this.log(`batch server: cannot follow its client's CPU: ${errorMessage(err)}`);
      this.close();
      return 'unknown';
    }
  }

  /** The server is done with this client. */
  close(): void {
    if (this.stat) closeSync(this.stat.fd);
    this.stat = undefined;
  }
}
