/**
 * What a batch must read, worked out once per list of pushed requests. TableBackend passes the
 * same array to every batch snapshot (pushes are frozen after the first batch), and a fresh
 * one-element array to each single read; keying by the array keeps the batch plan cached
 * across single reads in between.
 */
export class RequestPlan<R, P> {
  private readonly cache = new WeakMap<readonly R[], { length: number; plan: P }>();

  constructor(private readonly build: (requests: readonly R[]) => P) {}

  of(requests: readonly R[]): P {
    const hit = this.cache.get(requests);
    if (hit && hit.length === requests.length) return hit.plan;
    const plan = this.build(requests);
    this.cache.set(requests, { length: requests.length, plan });
    return plan;
  }
}
