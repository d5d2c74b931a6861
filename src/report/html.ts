import type { Report, RoundReport, SourceInfo } from '../monitor/model/report-model.js';
import { DASHES, type LineChart, type LineSeries, lineChart } from './svg/chart.js';
import { type Block, figure } from './svg/figure.js';
import { escapeXml, fixed, significant } from './svg/format.js';
import { type Layout, layout } from './svg/layout.js';
import { type LegendEntry, legend } from './svg/legend.js';
import { type Samples, sampleCount } from './svg/line.js';
import { timeline } from './svg/timeline.js';
import { renderText } from './text.js';

/*
 * The HTML report: one self-contained file, no scripts, its plots drawn as SVG by the small
 * renderer in ./svg/ (no plotting library in the process: see docs/monitor.md). Per round (each
 * round a <details>, so one is looked at at a time): per measured group a power plot above a
 * cumulative-energy plot, a utilisation plot and a regions timeline; then the text tables.
 */

/** Okabe–Ito: eight colours told apart with the common colour-vision deficiencies. */
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#000000', '#F0E442'];
/** Width of the plot areas; the SVG scales down with the page. */
const WIDTH = 860;
/** The widest left margin (px) that all plots of a round share: region names up to ~36 characters. */
const MAX_SHARED_LEFT = 240;

/** A power series: for counter-derived powers, the length (s) of the interval each covers. */
export interface PowerSamples extends Samples {
  dt?: ArrayLike<number>;
}

const seriesLabel = (id: string, source?: SourceInfo) =>
  `${id}${source?.method === 'estimated' ? ' (estimated)' : ''}`;

/** Columns that samples are appended to. */
const columns = () => ({ t: [] as number[], value: [] as number[] });

/**
 * A rate read at each sample over the interval since the one before (a counter's ΔE/Δt, a
 * utilisation) as a line: level over its interval, a step at each sample; a gap at a NaN.
 */
export function stepLine(times: ArrayLike<number>, values: ArrayLike<number>): Samples {
  const line = columns();
  for (let k = 1; k < Math.min(times.length, values.length); k++) {
    const v = values[k]!;
    if (Number.isFinite(v)) line.t.push(times[k - 1]!, times[k]!);
    else line.t.push(times[k]!);
    if (Number.isFinite(v)) line.value.push(v, v);
    else line.value.push(Number.NaN);
  }
  return line;
}

/**
 * Power and cumulative energy of each series of one group's sources over one round, a point at
 * every sample: counters as ΔE/Δt over the interval each sample ends (and ΣΔE), power readings
 * as they are (and trapezoids), estimates as utilisation × watts per unit over the interval the
 * utilisation covers. The cumulative energy is 0 at the first sample, just before the app
 * starts. A failed read is a NaN sample: a gap in the line.
 */
function powerAndEnergy(report: Report, round: RoundReport, source: SourceInfo) {
  const scale = source.wattsPerUnit ?? 1;
  const t = round.times;
  const interval = source.method !== 'power-integrated';
  return source.series.map((id) => {
    const v = round.values[report.series.findIndex((s) => s.id === id)] ?? [];
    const power = columns();
    const energy = columns();
    const intervals: number[] = [];
    const add = (to: { t: number[]; value: number[] }, at: number, value: number) => {
      to.t.push(at);
      to.value.push(value);
    };
    let total = 0;
    let started = false;
    for (let k = 0; k < t.length; k++) {
      if (source.method === 'counter') {
        // The first reading is the counter's origin: no power yet, energy 0.
        if (!started) {
          if (Number.isFinite(v[k]!)) {
            add(energy, t[k]!, 0);
            started = true;
          }
          continue;
        }
        const dt = t[k]! - t[k - 1]!;
        const de = v[k]! - v[k - 1]!;
        if (!(dt > 0)) continue;
        add(power, t[k]!, Number.isFinite(de) ? de / dt : Number.NaN);
        intervals.push(dt);
        if (!Number.isFinite(de)) {
          add(energy, t[k]!, Number.NaN);
          continue;
        }
        total += de;
      } else {
        const w = v[k]! * scale;
        if (k > 0 || !interval) add(power, t[k]!, Number.isFinite(w) ? w : Number.NaN);
        if (!Number.isFinite(w)) {
          // An estimate's first sample has no utilisation yet: the origin of its energy.
          if (interval && k === 0) add(energy, t[k]!, 0);
          else add(energy, t[k]!, Number.NaN);
          continue;
        }
        if (interval) total += k > 0 ? w * (t[k]! - t[k - 1]!) : 0;
        else {
          const before = k > 0 ? v[k - 1]! * scale : Number.NaN;
          if (Number.isFinite(before)) total += ((w + before) / 2) * (t[k]! - t[k - 1]!);
        }
      }
      add(energy, t[k]!, total);
    }
    const powerSamples: PowerSamples = source.method === 'counter' ? { ...power, dt: intervals } : power;
    const line = interval ? stepLine(t, stepValues(t, power)) : undefined;
    return { name: seriesLabel(id, source), power: powerSamples, line, energy };
  });
}

/** The values of `at` (sampled at some of `times`) at every one of `times`, NaN where none. */
function stepValues(times: ArrayLike<number>, at: Samples): number[] {
  const out: number[] = [];
  let j = 0;
  for (let k = 0; k < times.length; k++) {
    if (j < at.t.length && at.t[j] === times[k]) out.push(at.value[j++]!);
    else out.push(Number.NaN);
  }
  return out;
}

/**
 * The y-axis top of a power plot: the largest power over intervals at least half the median
 * interval long. The last interval of a round (ended by the app's exit) can be a few ms, and a
 * counter's ΔE/Δt over it is mostly quantisation; it is drawn, but clipped, not the scale.
 * Undefined for power readings (no intervals): their largest value is the top.
 */
export function robustMax(series: readonly PowerSamples[]): number | undefined {
  const intervals = new Float64Array(series.reduce((n, s) => n + (s.dt?.length ?? 0), 0));
  if (intervals.length === 0) return undefined;
  let filled = 0;
  for (const s of series) for (let k = 0; k < (s.dt?.length ?? 0); k++) intervals[filled++] = s.dt![k]!;
  const median = intervals.sort()[Math.floor(intervals.length / 2)]!;
  let top: number | undefined;
  for (const s of series)
    for (let k = 0; k < s.value.length; k++) {
      const v = s.value[k]!;
      if ((s.dt === undefined || s.dt[k]! >= median / 2) && Number.isFinite(v)) top = Math.max(top ?? v, v);
    }
  return top;
}

/** The largest finite value of the series; undefined for none. */
function largest(series: readonly Samples[]): number | undefined {
  let top: number | undefined;
  for (const s of series)
    for (let k = 0; k < sampleCount(s); k++)
      if (Number.isFinite(s.value[k]!)) top = Math.max(top ?? s.value[k]!, s.value[k]!);
  return top;
}

/** The larger of two tops; undefined when neither is a number. */
function maxOf(a: number | undefined, b: number | undefined): number | undefined {
  const known = [a, b].filter((x): x is number => x !== undefined && Number.isFinite(x));
  return known.length > 0 ? Math.max(...known) : undefined;
}

/** One colour per name across every plot of the report (the palette repeats past eight). */
function colourScale(names: readonly string[]): Map<string, string> {
  return new Map(names.map((n, i) => [n, PALETTE[i % PALETTE.length]!]));
}

/** Series with samples, each in its report colour and a dash by its place in the chart. */
function coloured(
  series: readonly { name: string; samples: Samples; line?: Samples }[],
  colours: Map<string, string>,
): LineSeries[] {
  return series
    .filter((s) => sampleCount(s.samples) > 0)
    .map((s, i) => ({
      ...s,
      colour: colours.get(s.name) ?? PALETTE[0]!,
      dash: DASHES[i % DASHES.length],
    }));
}

const sameSamples = (a: Samples, b: Samples) =>
  sampleCount(a) === sampleCount(b) &&
  Array.from({ length: sampleCount(a) }, (_, k) => k).every(
    (k) => a.t[k] === b.t[k] && Object.is(a.value[k], b.value[k]),
  );

/** Legend entries of a chart's series; one with the values of an earlier one says so. */
function legendEntries(series: readonly LineSeries[]): LegendEntry[] {
  return series.map((s, i) => {
    const twin = series.slice(0, i).find((o) => sameSamples(o.samples, s.samples));
    return { ...s, ...(twin ? { note: `same values as ${twin.name}: drawn dashed over it` } : {}) };
  });
}

/** Line charts stacked over one legend of their series (a figure with no values is left out). */
function lineFigure(charts: readonly LineChart[], l: Layout, label: string): string | undefined {
  const blocks: Block[] = [];
  for (const chart of charts) {
    const block = lineChart(chart, l);
    if (block) blocks.push(block);
  }
  if (blocks.length === 0) return undefined;
  blocks.push(legend(legendEntries(charts[0]!.series), l.left));
  return `<figure>${figure(blocks, label)}</figure>`;
}

/** Every plot of a round spans the same time: from the first sample to the app's exit or the last sample. */
function timeSpanOf(round: RoundReport): [number, number] {
  return [
    Math.min(0, round.times[0] ?? 0),
    Math.max(round.metrics.host.runtime || 0, round.times.at(-1) ?? 0),
  ];
}

/** Region calls of one round as bars on the time axis, one row per region name. */
function regionsFigure(round: RoundReport, l: Layout, rows: readonly string[]): string {
  const colours = colourScale(rows);
  const spans = round.metrics.regions.map((c) => ({
    row: c.name,
    start: c.start,
    stop: c.stop,
    colour: colours.get(c.name)!,
    label: `region: ${c.name}; start (s): ${fixed(c.start, 3)}; runtime (s): ${significant(c.runtime)}; energy (J): ${significant(c.energy)}`,
  }));
  return `<figure>${figure([timeline('regions', rows, spans, l)], 'regions')}</figure>`;
}

/** The plots of one round. */
function roundPlots(report: Report, round: RoundReport, colours: Map<string, string>): string[] {
  const rows = [...new Set(round.metrics.regions.map((c) => c.name))];
  const span = timeSpanOf(round);
  const regionsLayout = layout(...span, WIDTH, rows);
  // Every plot of the round has the timeline's left margin, so their time axes line up, unless
  // long region names would push the plots aside: then the timeline alone is wider.
  const l = regionsLayout.left <= MAX_SHARED_LEFT ? regionsLayout : layout(...span, WIDTH);
  const plots: (string | undefined)[] = [];
  for (const source of report.sources) {
    const series = powerAndEnergy(report, round, source);
    const tag = source.method === 'estimated' ? 'ESTIMATED' : source.method;
    const title = `${source.group} power (${tag})`;
    plots.push(
      lineFigure(
        [
          {
            title,
            valueTitle: 'power (W)',
            height: 220,
            series: coloured(
              series.map((s) => ({ name: s.name, samples: s.power, line: s.line })),
              colours,
            ),
            // A value above the top is marked where it is. A lone series reaches at least the
            // group's power in the tables (several series are each a part of it).
            top: maxOf(
              robustMax(series.map((s) => s.power)) ?? largest(series.map((s) => s.power)),
              series.length === 1 ? round.metrics.host.groups[source.group]?.power : undefined,
            ),
          },
          {
            title: `${source.group} cumulative energy (${tag})`,
            valueTitle: 'energy (J)',
            height: 160,
            series: coloured(
              series.map((s) => ({ name: s.name, samples: s.energy })),
              colours,
            ),
          },
        ],
        l,
        title,
      ),
    );
  }
  const util = report.series.flatMap((s, i) =>
    s.kind === 'util'
      ? [
          {
            name: s.id,
            samples: { t: round.times.slice(1), value: round.values[i]!.slice(1) },
            line: stepLine(round.times, round.values[i]!),
          },
        ]
      : [],
  );
  const title = 'utilisation (%)';
  plots.push(
    lineFigure([{ title, valueTitle: title, height: 160, series: coloured(util, colours) }], l, title),
  );
  if (rows.length > 0) plots.push(regionsFigure(round, regionsLayout, rows));
  return plots.filter((p) => p !== undefined);
}

/** Table rows (`|…|`) keep their columns (they scroll when wider than the page); prose wraps. */
const tablesHtml = (text: string) =>
  escapeXml(text).replace(/^\|.*(?:\n\|.*)*/gm, (rows) => `<span class="table">${rows}</span>`);

const STYLE = `body{font-family:sans-serif;margin:1em auto;padding:0 1em;max-width:1100px}figure{margin:1em 0}
summary{font-size:1.2em;font-weight:bold;cursor:pointer;margin:.5em 0}
pre{background:#f6f6f6;padding:1em;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
pre .table{white-space:pre;overflow-wrap:normal}
.plot text{font-family:sans-serif;font-size:11px}.plot .title{font-size:13px;font-weight:bold}
.plot .axis-title{font-weight:bold}.plot .grid{stroke:#e6e6e6}.plot .tick,.plot .domain{stroke:#888}
.plot .line{fill:none;stroke-width:2;stroke-linejoin:round;stroke-linecap:round}.plot .bars{opacity:.8}`;

/** One self-contained HTML file: per round (selectable) its plots, then the text tables. */
export async function renderHtml(report: Report): Promise<string> {
  const names = [
    ...report.sources.flatMap((s) => s.series.map((id) => seriesLabel(id, s))),
    ...report.series.filter((s) => s.kind === 'util').map((s) => s.id),
  ];
  const colours = colourScale([...new Set(names)]);
  const sections: string[] = [];
  for (const [i, round] of report.rounds.entries()) {
    const plots = roundPlots(report, round, colours);
    if (plots.length === 0) continue;
    const summary = `round ${escapeXml(round.id)}${round.exit.status !== 0 ? ` (exit status ${round.exit.status})` : ''}`;
    sections.push(
      `<details${i === 0 ? ' open' : ''}><summary>${summary}</summary>\n${plots.join('\n')}\n</details>`,
    );
  }
  if (sections.length === 0)
    sections.push('<p>No energy, power or utilisation source was available: nothing to plot.</p>');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>joulegate: ${escapeXml(report.app)} ${escapeXml(report.runId)}</title>
<style>${STYLE}</style>
</head><body>
<h1>joulegate report: ${escapeXml(report.app)}</h1>
${report.failed ? `<p><strong>FAILED run (${escapeXml(report.failure)}): partial report.</strong></p>` : ''}
${sections.join('\n')}
<h2>Tables</h2>
<pre>${tablesHtml(renderText(report))}</pre>
</body></html>
`;
}
