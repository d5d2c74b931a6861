import { JoulegateError } from '../platform/errors.js';

/** Asks the bus whether a unique name still has an owner (org.freedesktop.DBus.NameHasOwner). */
export type HasOwner = (uniqueName: string) => Promise<boolean>;

/** A watch on one caller's connection, for a call that outlives its caller otherwise. */
export interface ConnectionWatch {
  /** Aborted once the connection has left the bus. */
  readonly gone: AbortSignal;
  /** Ends the watch (the call is answered); safe to call more than once. */
  release(): void;
}

/** What a method learns about the call besides its caller and arguments. */
export interface CallContext {
  /** Watches the caller's connection until `release`: a long call stops once nobody waits for it. */
  watchConnection(): ConnectionWatch;
}

/**
 * Connections that long calls (a batch server start) wait on. Only watched connections are
 * kept, each until its last watch is released, so this holds one entry per call in progress.
 */
export class ConnectionDepartures {
  private readonly watched = new Map<string, Set<AbortController>>();

  constructor(private readonly hasOwner: HasOwner) {}

  watch(uniqueName: string): ConnectionWatch {
    const controller = new AbortController();
    let set = this.watched.get(uniqueName);
    if (!set) {
      set = new Set();
      this.watched.set(uniqueName, set);
    }
    set.add(controller);
    const release = () => {
      const current = this.watched.get(uniqueName);
      current?.delete(controller);
      if (current?.size === 0) this.watched.delete(uniqueName);
    };
    // The connection may have left before the watch began (its NameOwnerChanged came first):
    // the bus answers in order, after any such signal, so asking once closes the gap.
    this.hasOwner(uniqueName).then(
      (owned) => {
        if (!owned && set.has(controller)) this.left(uniqueName);
      },
      () => {},
    );
    return { gone: controller.signal, release };
  }

  /** The bus announced that `uniqueName` left (NameOwnerChanged with no new owner). */
  left(uniqueName: string): void {
    const set = this.watched.get(uniqueName);
    if (!set) return;
    this.watched.delete(uniqueName);
    for (const c of set) c.abort(new JoulegateError(`the caller's connection ${uniqueName} left the bus`));
  }

  /** Connections watched now (tests watch it return to 0). */
  get size(): number {
    return this.watched.size;
  }
}
