import { type Frame, xAxis } from './axis.js';
import type { Block } from './figure.js';
import { escapeXml, px, textWidth } from './format.js';
import { type Axis, fixedAxis, linear } from './scale.js';

/** The horizontal layout every panel of a round shares, so that their time axes line up. */
export interface Layout {
  left: number;
  plotWidth: number;
  time: Axis;
}

export const TITLE_HEIGHT = 24;
/** Tick marks, their labels and the axis title under a plot area. */
export const X_AXIS_HEIGHT = 44;
const RIGHT = 20;
const MIN_LEFT = 64;
const FONT = 11;
const TIME_TITLE = 'time since app start (s)';

/** A layout over [from, to] seconds whose left margin fits the longest of `rowLabels` whole. */
export function layout(
  from: number,
  to: number,
  plotWidth: number,
  rowLabels: readonly string[] = [],
): Layout {
  const widest = Math.max(0, ...rowLabels.map((l) => textWidth(l, FONT)));
  const left = Math.ceil(Math.max(MIN_LEFT, widest + 12));
  return { left, plotWidth, time: fixedAxis(from, to, Math.max(2, Math.round(plotWidth / 80))) };
}

export const widthOf = (l: Layout) => l.left + l.plotWidth + RIGHT;

export const timeScale = (l: Layout) => linear(l.time.domain, [l.left, l.left + l.plotWidth]);

/** What a panel draws: its value axis (outside the plot area) and its marks (clipped to it). */
export interface PanelParts {
  axis: string;
  marks: string;
}

/**
 * A panel of `height` px plot area: its title above, the time axis below, the value axis and
 * the marks, clipped to the plot area (a nested <svg> clips, and needs no id unique in the page).
 */
export function panel(l: Layout, title: string, height: number, draw: (f: Frame) => PanelParts): Block {
  const frame: Frame = { left: l.left, top: TITLE_HEIGHT, width: l.plotWidth, height };
  const { axis, marks } = draw(frame);
  const { left, top, width } = frame;
  return {
    width: widthOf(l),
    height: TITLE_HEIGHT + height + X_AXIS_HEIGHT,
    body:
      `<text class="title" x="${px(left + width / 2)}" y="16" text-anchor="middle">${escapeXml(title)}</text>` +
      xAxis(frame, l.time, timeScale(l), TIME_TITLE) +
      axis +
      `<svg x="${left}" y="${top}" width="${width}" height="${height}" viewBox="${left} ${top} ${width} ${height}">${marks}</svg>`,
  };
}
