import { bandAxis } from './axis.js';
import type { Block } from './figure.js';
import { escapeXml, px } from './format.js';
import { type Layout, panel, timeScale } from './layout.js';

/** One bar: a region call from start to stop, in the row of its name. */
export interface Span {
  row: string;
  start: number;
  stop: number;
  colour: string;
  /** Hover text. */
  label: string;
}

const BAND = 20;

/** Bars on the round's time axis, one row per name in `rows` order; each bar at least 1 px wide. */
export function timeline(title: string, rows: readonly string[], spans: readonly Span[], l: Layout): Block {
  const x = timeScale(l);
  const rowOf = new Map(rows.map((r, i) => [r, i]));
  return panel(l, title, rows.length * BAND, (frame) => {
    const bars = spans.map((s) => {
      const from = x(s.start);
      const y = frame.top + rowOf.get(s.row)! * BAND + BAND * 0.1;
      return `<rect x="${px(from)}" y="${px(y)}" width="${px(Math.max(1, x(s.stop) - from))}" height="${BAND * 0.8}" fill="${s.colour}"><title>${escapeXml(s.label)}</title></rect>`;
    });
    return { axis: bandAxis(frame, rows, BAND), marks: `<g class="bars">${bars.join('')}</g>` };
  });
}
