import { InvalidArgumentError } from '../platform/errors.js';

/** A start's turn: held while its server starts, given back once it has started or failed. */
export interface StartTurn {
  release(): void;
}

interface Waiter {
  grant: (turn: StartTurn) => void;
}

/**
 * Turns to start a batch server, handed out fairly between users. Each uid has its own queue
 * of waiting starts; a free turn goes to the waiting uid with no start in progress, then to the
 * one served longest ago, so uids take turns: a burst of starts from one user delays another
 * user's start by about one turn per user waiting, not by the whole burst. At most `atOnce`
 * starts are in progress; a waiting start holds nothing but its place in its queue. Nothing here
 * knows how a server starts (a spare process, a fork server or a pool can serve the turns alike).
 */
export class StartAdmission {
  private readonly queues = new Map<number, Waiter[]>();
  /** Per uid with a start waiting or in progress: turns in progress, and when it was last served. */
  private readonly users = new Map<number, { inProgress: number; lastServed: number }>();
  private inProgress = 0;
  private served = 0;

  constructor(
    private readonly atOnce: number,
    /** Most starts one uid may have waiting; more are refused. */
    private readonly waitingPerUser: number,
  ) {}

  /** Starts of `uid` waiting for a turn. */
  waitingOf(uid: number): number {
    return this.queues.get(uid)?.length ?? 0;
  }

  /** Starts waiting, all users together. */
  get waiting(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /**
   * Resolves with a turn once it is this start's; rejects with the signal's reason if it is
   * aborted first (the start then leaves the queue), or at once if `uid`'s queue is full.
   */
  turn(uid: number, signal: AbortSignal): Promise<StartTurn> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.inProgress < this.atOnce && this.queues.size === 0) return Promise.resolve(this.grant(uid));
    const queue = this.queues.get(uid) ?? [];
    if (queue.length >= this.waitingPerUser) {
      return Promise.reject(
        new InvalidArgumentError(
          `Batch server limit reached: uid ${uid} has ${queue.length} batch server starts waiting (limit ${this.waitingPerUser}, JOULEGATE_BATCH_MAX_PER_USER)`,
        ),
      );
    }
    this.queues.set(uid, queue);
    return new Promise<StartTurn>((resolve, reject) => {
      const onAbort = () => {
        const i = queue.indexOf(waiter);
        if (i < 0) return;
        queue.splice(i, 1);
        if (queue.length === 0) this.queues.delete(uid);
        this.forgetIdle(uid);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        grant: (t) => {
          signal.removeEventListener('abort', onAbort);
          resolve(t);
        },
      };
      queue.push(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
      this.serveNext();
    });
  }

  private grant(uid: number): StartTurn {
    const user = this.users.get(uid) ?? { inProgress: 0, lastServed: 0 };
    this.users.set(uid, user);
    user.inProgress++;
    user.lastServed = ++this.served;
    this.inProgress++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        user.inProgress--;
        this.inProgress--;
        this.forgetIdle(uid);
        this.serveNext();
      },
    };
  }

  /** A uid with nothing waiting or in progress is not remembered (this map stays bounded). */
  private forgetIdle(uid: number): void {
    if (!this.queues.has(uid) && this.users.get(uid)?.inProgress === 0) this.users.delete(uid);
  }

  /** Hands free turns out, each to the next uid in fairness order. */
  private serveNext(): void {
    while (this.inProgress < this.atOnce && this.queues.size > 0) {
      let next: number | undefined;
      let best: [number, number] | undefined;
      for (const uid of this.queues.keys()) {
        const user = this.users.get(uid);
        const rank: [number, number] = [user?.inProgress ?? 0, user?.lastServed ?? 0];
        if (!best || rank[0] < best[0] || (rank[0] === best[0] && rank[1] < best[1])) {
          best = rank;
          next = uid;
        }
      }
      const queue = this.queues.get(next!)!;
      const waiter = queue.shift()!;
      if (queue.length === 0) this.queues.delete(next!);
      waiter.grant(this.grant(next!));
    }
  }
}
