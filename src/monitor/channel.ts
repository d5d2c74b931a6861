import type { RegionEvent } from './regions-pairing.js';

/**
 * The region channel between an app and `joulegate monitor`: the monitor opens a pipe as the
 * app's fd N and names it in JOULEGATE_REGION_FD. Each event is one line
 * `S|E <clock ms> <name>`, the clock being clockMs() in the app, which shares its basis with the
 * monitor's (time origin + monotonic time).
 */
export const REGION_FD_ENV = 'JOULEGATE_REGION_FD';

export function encodeRegionEvent(kind: 'start' | 'stop', ms: number, name: string): string {
  return `${kind === 'start' ? 'S' : 'E'} ${ms.toFixed(3)} ${name.replace(/[\r\n]/g, ' ')}\n`;
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
    const m = /^([SE]) (-?[0-9.]+) (.+)$/.exec(line);
    if (!m) {
      if (line.trim() !== '') this.problems.push(`region channel: unreadable line "${line.slice(0, 80)}"`);
      return;
    }
    this.events.push({
      name: m[3]!,
      kind: m[1] === 'S' ? 'start' : 'stop',
      t: (Number(m[2]) - this.originMs) / 1000,
    });
  }
}
