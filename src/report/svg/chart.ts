import { yAxis } from './axis.js';
import type { Block } from './figure.js';
import { escapeXml, fixed, px, significant } from './format.js';
import { type Layout, panel, timeScale } from './layout.js';
import { decimate, linePath, type Samples, sampleCount } from './line.js';
import { linear, valueAxis } from './scale.js';

export interface LineSeries {
  name: string;
  colour: string;
  /** The readings: a point mark each (while few), and what the value axis spans. */
  samples: Samples;
  /** The line, when not through the readings: a rate as a step over the interval it covers. */
  line?: Samples;
  /** stroke-dasharray: series of one chart differ in it, so identical values still show both. */
  dash?: string;
}

/** Dash patterns by a series' place in its chart; the first is solid. */
export const DASHES = ['', '7 4', '2 4', '10 3 2 3'];

/** Point mark radius by a series' place: each later one smaller, so one drawn over an equal one leaves a ring. */
const dotRadius = (i: number) => Math.max(1.5, 3.5 - i);

export interface LineChart {
  title: string;
  /** The value axis title, its unit in parentheses: `power (W)`. */
  valueTitle: string;
  height: number;
  series: readonly LineSeries[];
  /** The value the axis must reach, when not the largest value (see robustMax in html.ts). */
  top?: number;
}

/** Above this many samples per chart, no point marks (and so no per-sample hover text). */
export const MAX_POINT_MARKS = 1500;

const unitOf = (title: string) => /\(([^)]*)\)$/.exec(title)?.[1] ?? title;

/**
 * A line chart over the round's time axis: a <path> per series (min/max-decimated per pixel
 * column, a gap at each NaN), and while the samples are few a dot per sample with its series,
 * time and value as hover text. Undefined when no sample has a value: nothing to plot.
 */
export function lineChart(chart: LineChart, l: Layout): Block | undefined {
  const axis = valueAxis(valuesOf(chart.series), Math.max(2, Math.round(chart.height / 45)), chart.top);
  if (!axis) return undefined;
  const x = timeScale(l);
  const unit = escapeXml(unitOf(chart.valueTitle));
  const withDots = chart.series.reduce((n, s) => n + sampleCount(s.samples), 0) <= MAX_POINT_MARKS;
  return panel(l, chart.title, chart.height, (frame) => {
    const y = linear(axis.domain, [frame.top + frame.height, frame.top]);
    const [low, high] = axis.domain;
    const marks = chart.series.map((s, i) => {
      const name = escapeXml(s.name);
      const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : '';
      const line = `<path class="line" d="${linePath(decimate(s.line ?? s.samples, x), x, y)}" stroke="${s.colour}"${dash}><title>series: ${name}</title></path>`;
      const dots: string[] = [];
      for (let k = 0; k < sampleCount(s.samples); k++) {
        const [t, v] = [s.samples.t[k]!, s.samples.value[k]!];
        if (!Number.isFinite(v)) continue;
        const text = `series: ${name}; time (s): ${fixed(t, 3)}; ${unit}: ${significant(v)}`;
        // A value beyond the axis (see robustMax in html.ts) is a triangle on the frame's edge, always.
        if (v > high || v < low) {
          const [edge, tip] = v > high ? [frame.top + 7, frame.top] : [y(low) - 7, y(low)];
          const cx = x(t);
          dots.push(
            `<path class="offscale" d="M${px(cx - 5)},${px(edge)}L${px(cx + 5)},${px(edge)}L${px(cx)},${px(tip)}Z"><title>${text} (off the axis)</title></path>`,
          );
        } else if (withDots)
          dots.push(
            `<circle class="point" cx="${px(x(t))}" cy="${px(y(v))}" r="${dotRadius(i)}"><title>${text}</title></circle>`,
          );
      }
      return `${line}<g fill="${s.colour}">${dots.join('')}</g>`;
    });
    return { axis: yAxis(frame, axis, y, chart.valueTitle), marks: marks.join('') };
  });
}

/** Every value of every series, without copying them into one array. */
function* valuesOf(series: readonly LineSeries[]): Generator<number> {
  for (const s of series) for (let k = 0; k < sampleCount(s.samples); k++) yield s.samples.value[k]!;
}
