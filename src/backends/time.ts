import { Aggregation } from '../platform/aggregation.js';
import type { BackendContext } from '../platform/backend.js';
import { DomainType } from '../platform/domains.js';
import { FormatType } from '../platform/format.js';
import { Behavior, Units } from '../platform/signal-info.js';
import { type SignalDef, TableBackend } from '../platform/table-backend.js';
import { registerBackend } from './registry.js';

/**
 * TIME's zero, in nanoseconds of process.hrtime.bigint(). On Linux that is CLOCK_MONOTONIC,
 * one clock for every process on the node, so an origin taken in one process means the same
 * instant in another: the daemon hands its origin to each batch server, and TIME read over
 * D-Bus and through a batch server is one clock that never jumps backwards (as in GEOPM, whose
 * batch server is a fork of the daemon).
 */
let processOrigin: bigint | undefined;

/** How a batch server learns the daemon's origin (set by the launcher when it spawns one). */
export const TIME_ORIGIN_ENV = 'JOULEGATE_TIME_ORIGIN_NS';

/** This process's TIME origin; fixed by the first caller (normally the TIME backend's setup). */
export function timeOriginNs(): bigint {
  processOrigin ??= process.hrtime.bigint();
  return processOrigin;
}

/**
 * Makes TIME count from `originNs` (another process's timeOriginNs()) in this process. Only
 * before TIME was loaded here: moving the origin later would make TIME jump.
 */
export function adoptTimeOrigin(originNs: bigint): void {
  if (processOrigin !== undefined && processOrigin !== originNs) {
    throw new Error('the TIME origin is already fixed in this process');
  }
  if (originNs > process.hrtime.bigint()) throw new Error(`TIME origin ${originNs} ns is in the future`);
  processOrigin = originNs;
}

/**
 * Seconds on the monotonic clock since this process's TIME origin. Native to cpu, as GEOPM's
 * TIME: every cpu reads the same clock, so TIME is readable at every domain (select_first).
 */
export class TimeBackend extends TableBackend<number> {
  readonly id = 'time';
  readonly name = 'TIME';
  readonly description = 'Elapsed time on a monotonic clock';
  private origin = 0n;

  protected snapshot(): number {
    return Number(process.hrtime.bigint() - this.origin) / 1e9;
  }

  protected define(_ctx: BackendContext): { signals: SignalDef<number>[] } {
    this.origin = timeOriginNs();
    return {
      signals: [
        {
          name: 'ELAPSED',
          aliases: ['TIME'],
          description:
            'Time elapsed since the daemon started (read through the service) or this program loaded TIME (monotonic clock)',
          domain: DomainType.Cpu,
          aggregation: Aggregation.SelectFirst,
          format: FormatType.Double,
          behavior: Behavior.Monotone,
          units: Units.Seconds,
          read: (_idx, ctx) => ctx.current,
          native: () => ({ kind: 'clock', originNs: this.origin }),
        },
      ],
    };
  }
}

registerBackend({
  name: 'TIME',
  order: 0,
  description: 'monotonic clock',
  offers: { signals: ['TIME'] },
  create: () => new TimeBackend(),
});
