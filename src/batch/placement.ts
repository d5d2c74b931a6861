import { readFileSync } from 'node:fs';
import { parseProcessStat } from '../attribution/proc-stat.js';
import { currentCpu, moveCurrentThreadTo } from '../platform/cpu-affinity.js';
import { errorMessage } from '../platform/errors.js';

/**
 * Samples a server answers between two looks at where it runs: at 1 kHz about a second. A
 * look costs one read of /proc/<client>/stat, so per sample it is nothing.
 */
export const SAMPLES_BETWEEN_LOOKS = 1000;

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
  private failed = false;

  constructor(
    private readonly clientPid: number,
    private readonly log: (line: string) => void,
  ) {}

  /** Moves the calling thread to the client's CPU when it runs elsewhere. */
  follow(): void {
    if (this.failed) return;
    try {
      const stat = readFileSync(`/proc/${this.clientPid}/stat`, 'utf8');
      const cpu = parseProcessStat(stat, `/proc/${this.clientPid}/stat`).processor;
      if (cpu === currentCpu()) return;
      if (moveCurrentThreadTo(cpu) === 'moved') this.moves++;
    } catch (err) {
      // The client is gone (its end comes next), or /proc or the calls are refused: the server
      // runs where the kernel puts it, and says so once.
      this.failed = true;
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.log(`batch server: cannot follow its client's CPU: ${errorMessage(err)}`);
    }
  }
}
