import { escapeXml, px, textWidth, tickLabel } from './format.js';
import type { Axis } from './scale.js';

/** The plot area of a panel, in the panel's coordinates. */
export interface Frame {
  left: number;
  top: number;
  width: number;
  height: number;
}

const TICK = 5;
const FONT = 11;

const largestOf = (axis: Axis) => Math.max(...axis.ticks.map(Math.abs));

/** Vertical grid lines, tick marks and labels under the plot area, and the axis title below them. */
export function xAxis(frame: Frame, axis: Axis, x: (v: number) => number, title: string): string {
  const bottom = frame.top + frame.height;
  const largest = largestOf(axis);
  const ticks = axis.ticks.map((t) => {
    const at = px(x(t));
    return (
      `<line class="grid" x1="${at}" x2="${at}" y1="${frame.top}" y2="${bottom}"/>` +
      `<line class="tick" x1="${at}" x2="${at}" y1="${bottom}" y2="${bottom + TICK}"/>` +
      `<text x="${at}" y="${bottom + TICK + 11}" text-anchor="middle">${tickLabel(t, axis.step, largest)}</text>`
    );
  });
  return (
    `<g class="axis">${ticks.join('')}` +
    `<line class="domain" x1="${frame.left}" x2="${frame.left + frame.width}" y1="${bottom}" y2="${bottom}"/>` +
    `<text class="axis-title" x="${px(frame.left + frame.width / 2)}" y="${bottom + TICK + 28}" text-anchor="middle">${escapeXml(title)}</text></g>`
  );
}

/** Horizontal grid lines, tick marks and labels left of the plot area, and the title turned upright. */
export function yAxis(frame: Frame, axis: Axis, y: (v: number) => number, title: string): string {
  const largest = largestOf(axis);
  const ticks = axis.ticks.map((t) => {
    const at = px(y(t));
    return (
      `<line class="grid" x1="${frame.left}" x2="${frame.left + frame.width}" y1="${at}" y2="${at}"/>` +
      `<line class="tick" x1="${frame.left - TICK}" x2="${frame.left}" y1="${at}" y2="${at}"/>` +
      `<text x="${frame.left - TICK - 3}" y="${px(y(t) + 4)}" text-anchor="end">${tickLabel(t, axis.step, largest)}</text>`
    );
  });
  const middle = px(frame.top + frame.height / 2);
  // Just left of the widest tick label, not at the figure's edge (a long row label elsewhere widens the margin).
  const labelWidth = Math.max(...axis.ticks.map((t) => textWidth(tickLabel(t, axis.step, largest), FONT)));
  const titleX = px(Math.max(14, frame.left - TICK - 3 - labelWidth - 5));
  return (
    `<g class="axis">${ticks.join('')}` +
    `<line class="domain" x1="${frame.left}" x2="${frame.left}" y1="${frame.top}" y2="${frame.top + frame.height}"/>` +
    `<text class="axis-title" transform="translate(${titleX},${middle}) rotate(-90)" text-anchor="middle">${escapeXml(title)}</text></g>`
  );
}

/** One row per name left of the plot area (a band axis), the name whole and right-aligned. */
export function bandAxis(frame: Frame, names: readonly string[], band: number): string {
  const labels = names.map(
    (n, i) =>
      `<text x="${frame.left - TICK - 3}" y="${px(frame.top + (i + 0.5) * band + 4)}" text-anchor="end">${escapeXml(n)}</text>`,
  );
  return `<g class="axis">${labels.join('')}<line class="domain" x1="${frame.left}" x2="${frame.left}" y1="${frame.top}" y2="${frame.top + frame.height}"/></g>`;
}
