/**
 * Runs async critical sections one at a time, in call order. joulegated decides every change
 * of sessions, write mode and batch servers inside one of these.
 */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}
