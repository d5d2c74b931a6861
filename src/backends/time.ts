import { Aggregation } from '../platform/aggregation.js';
import type { BackendContext } from '../platform/backend.js';
import { DomainType } from '../platform/domains.js';
import { FormatType } from '../platform/format.js';
import { Behavior, Units } from '../platform/signal-info.js';
import { type SignalDef, TableBackend } from '../platform/table-backend.js';
import { registerBackend } from './registry.js';

/** Seconds on the monotonic clock since the backend was set up. */
export class TimeBackend extends TableBackend<number> {
  readonly id = 'time';
  readonly name = 'TIME';
  readonly description = 'Elapsed time on a monotonic clock';
  private origin = performance.now();

  protected snapshot(): number {
    return (performance.now() - this.origin) / 1000;
  }

  protected define(_ctx: BackendContext): { signals: SignalDef<number>[] } {
    this.origin = performance.now();
    return {
      signals: [
        {
          name: 'ELAPSED',
          aliases: ['TIME'],
          description: 'Time elapsed since the backend was loaded (monotonic clock)',
          domain: DomainType.Board,
          aggregation: Aggregation.SelectFirst,
          format: FormatType.Double,
          behavior: Behavior.Monotone,
          units: Units.Seconds,
          read: (_idx, ctx) => ctx.current,
        },
      ],
    };
  }
}

registerBackend({ name: 'TIME', order: 0, description: 'monotonic clock', create: () => new TimeBackend() });
