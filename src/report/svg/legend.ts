import type { Block } from './figure.js';
import { escapeXml, textWidth } from './format.js';

export interface LegendEntry {
  name: string;
  colour: string;
}

const ROW = 16;
const FONT = 11;

/** One row per entry under the plots: a colour swatch and the name, whole (the block grows to fit it). */
export function legend(entries: readonly LegendEntry[], left: number): Block {
  const rows = entries.map(
    (e, i) =>
      `<circle cx="${left + 5}" cy="${i * ROW + 8}" r="5" fill="${e.colour}"/>` +
      `<text x="${left + 16}" y="${i * ROW + 12}">${escapeXml(e.name)}</text>`,
  );
  const width = left + 16 + Math.max(0, ...entries.map((e) => textWidth(e.name, FONT))) + 8;
  return { width, height: entries.length * ROW + 8, body: `<g class="legend">${rows.join('')}</g>` };
}
