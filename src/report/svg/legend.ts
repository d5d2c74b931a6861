import type { Block } from './figure.js';
import { escapeXml, textWidth } from './format.js';

export interface LegendEntry {
  name: string;
  colour: string;
  /** The series' line dash (see DASHES in chart.ts). */
  dash?: string;
  /** Said after the name, in its own text: `same values as X`. */
  note?: string;
}

const SWATCH = 22;

const ROW = 16;
const FONT = 11;

/**
 * One row per entry under the plots: a swatch of the line as drawn (colour and dash) and the
 * name, whole, then its note (the block grows to fit them).
 */
export function legend(entries: readonly LegendEntry[], left: number): Block {
  const label = (e: LegendEntry) => `${e.name}${e.note ? `  (${e.note})` : ''}`;
  const rows = entries.map((e, i) => {
    const dash = e.dash ? ` stroke-dasharray="${e.dash}"` : '';
    const nameEnd = left + SWATCH + 6 + textWidth(e.name, FONT);
    return (
      `<line class="line" x1="${left}" x2="${left + SWATCH}" y1="${i * ROW + 8}" y2="${i * ROW + 8}" stroke="${e.colour}"${dash}/>` +
      `<text x="${left + SWATCH + 6}" y="${i * ROW + 12}">${escapeXml(e.name)}</text>` +
      (e.note
        ? `<text class="note" x="${nameEnd + 6}" y="${i * ROW + 12}">(${escapeXml(e.note)})</text>`
        : '')
    );
  });
  const width = left + SWATCH + 6 + Math.max(0, ...entries.map((e) => textWidth(label(e), FONT))) + 8;
  return { width, height: entries.length * ROW + 8, body: `<g class="legend">${rows.join('')}</g>` };
}
