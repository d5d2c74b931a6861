import type { RegionEvent } from './model/report-model.js';

/**
 * The region channel between an app and `joulegate monitor`: the monitor opens a pipe as the
 * app's fd N and names it in JOULEGATE_REGION_FD. Each event is one line
 * `S|E[#CALL] <ms> <name>`: ms on CLOCK_MONOTONIC with three decimals (clock.ts), and an optional
 * call id (no spaces) that pairs a stop with its own start even when threads interleave calls
 * of one name. The JS client (regions.ts) and the Python one (python/joulegate) write the same.
 */
export const REGION_FD_ENV = 'JOULEGATE_REGION_FD';

export function encodeRegionEvent(kind: 'start' | 'stop', ms: number, name: string, call?: string): string {
  const tag = `${kind === 'start' ? 'S' : 'E'}${call === undefined ? '' : `#${call}`}`;
  return `${tag} ${ms.toFixed(3)} ${name.replace(/[\r\n]/g, ' ')}\n`;
}

/** Splits the byte stream into events; keeps a partial last line for the next chunk. */
export class RegionEventDecoder {
  readonly events: RegionEvent[] = [];
  readonly problems: string[] = [];
  private rest = '';

  constructor(private readonly originMs: number) {}

  push(chunk: string): void {
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop()!;
    for (const line of lines) this.decode(line);
  }

  private decode(line: string): void {
    const m = /^([SE])(?:#(\S+))? (-?[0-9.]+) (.+)$/.exec(line);
    if (!m) {
      if (line.trim() !== '') this.problems.push(`region channel: unreadable line "${line.slice(0, 80)}"`);
      return;
    }
    this.events.push({
      name: m[4]!,
      kind: m[1] === 'S' ? 'start' : 'stop',
      t: (Number(m[3]) - this.originMs) / 1000,
      ...(m[2] === undefined ? {} : { call: m[2] }),
    });
  }
}
