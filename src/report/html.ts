import type { Report, RoundReport, SourceInfo } from '../monitor/report-model.js';
import { importModule } from '../platform/dynamic-import.js';
import { renderText } from './text.js';

/*
 * The HTML report: one self-contained file, SVG rendered in Node (vega-lite → vega, no canvas,
 * no browser, no scripts in the page). Per round (each round a <details>, so one is looked at
 * at a time): per measured group a power plot above a cumulative-energy plot, a utilisation plot
 * and a regions timeline; then the text tables.
 */

/** Okabe–Ito: eight colours told apart with the common colour-vision deficiencies. */
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#000000', '#F0E442'];
/** Width the plots are laid out for; the SVG scales down with the page (see responsive()). */
const WIDTH = 860;
/** Above this many points per plot, no point marks (and so no per-sample tooltips). */
const MAX_POINT_MARKS = 1500;

export interface Point {
  t: number;
  value: number;
  series: string;
  /** Length of the interval a counter-derived power covers (s); undefined for readings. */
  dt?: number;
}

const esc = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const seriesLabel = (id: string, source?: SourceInfo) =>
  `${id}${source?.method === 'estimated' ? ' (estimated)' : ''}`;

/**
 * Power and cumulative energy over one round of one group's sources: counters as ΔE/Δt at
 * interval midpoints (and ΣΔE), power readings as they are (and trapezoids), estimates as
 * utilisation × watts per unit. Gaps stay out (no line across them).
 */
function powerAndEnergy(report: Report, round: RoundReport, source: SourceInfo) {
  const power: Point[] = [];
  const energy: Point[] = [];
  const scale = source.wattsPerUnit ?? 1;
  const t = round.times;
  for (const id of source.series) {
    const v = round.values[report.series.findIndex((s) => s.id === id)] ?? [];
    const series = seriesLabel(id, source);
    let total = 0;
    for (let k = 0; k < t.length; k++) {
      if (source.method === 'counter') {
        if (k === 0) continue;
        const dt = t[k]! - t[k - 1]!;
        const de = v[k]! - v[k - 1]!;
        if (!(dt > 0) || !Number.isFinite(de)) continue;
        power.push({ t: (t[k]! + t[k - 1]!) / 2, value: de / dt, series, dt });
        total += de;
      } else {
        const w = v[k]! * scale;
        if (!Number.isFinite(w)) continue;
        power.push({ t: t[k]!, value: w, series });
        const before = k > 0 ? v[k - 1]! * scale : Number.NaN;
        if (Number.isFinite(before)) total += ((w + before) / 2) * (t[k]! - t[k - 1]!);
      }
      energy.push({ t: t[k]!, value: total, series });
    }
  }
  return { power, energy };
}

/**
 * The y-axis top of a power plot: the largest power over intervals at least half the median
 * interval long. The last interval of a round (ended by the app's exit) can be a few ms, and a
 * counter's ΔE/Δt over it is mostly quantisation; it is drawn, but clipped, not the scale.
 */
export function robustMax(points: readonly Point[]): number | undefined {
  const intervals = points.map((p) => p.dt).filter((d): d is number => d !== undefined);
  if (intervals.length === 0) return undefined;
  const median = [...intervals].sort((a, b) => a - b)[Math.floor(intervals.length / 2)]!;
  const kept = points.filter((p) => p.dt === undefined || p.dt >= median / 2).map((p) => p.value);
  return kept.length > 0 ? Math.max(...kept) : undefined;
}

/** One colour per series across every plot of the report (the palette repeats past eight). */
function colourScale(names: readonly string[]) {
  return { domain: names, range: names.map((_, i) => PALETTE[i % PALETTE.length]!) };
}

const LEGEND = { title: null, orient: 'bottom', direction: 'vertical', labelLimit: 0 };

/** Every plot of a round spans the same time: from the first sample to the app's exit or the last sample. */
type XDomain = [number, number];

function xDomainOf(round: RoundReport): XDomain {
  return [
    Math.min(0, round.times[0] ?? 0),
    Math.max(round.metrics.host.runtime || 0, round.times.at(-1) ?? 0),
  ];
}

function lineLayer(points: Point[], y: { title: string; max?: number }, colours: object, x: XDomain) {
  const unitOf = y.title.replace(/^.*\((.*)\)$/, '$1');
  return {
    data: { values: points },
    mark: {
      type: 'line',
      clip: true,
      ...(points.length <= MAX_POINT_MARKS ? { point: { filled: true, size: 16 } } : {}),
    },
    encoding: {
      x: {
        field: 't',
        type: 'quantitative',
        title: 'time since app start (s)',
        scale: { domain: x, nice: false },
      },
      y: {
        field: 'value',
        type: 'quantitative',
        title: y.title,
        ...(y.max !== undefined ? { scale: { domain: [0, y.max * 1.05], nice: false } } : {}),
      },
      // The report-wide colours; the legend lists this plot's series only.
      color: {
        field: 'series',
        type: 'nominal',
        scale: colours,
        legend: { ...LEGEND, values: [...new Set(points.map((p) => p.series))] },
      },
      tooltip: [
        { field: 'series', title: 'series' },
        { field: 't', title: 'time (s)', format: '.3f' },
        { field: 'value', title: unitOf, format: '.4~g' },
      ],
    },
  };
}

/** Region calls of one round as bars on a time axis, one row per region name. */
function regionsTimeline(round: RoundReport, x: XDomain) {
  const calls = round.metrics.regions.map((c) => ({
    region: c.name,
    start: c.start,
    stop: c.stop,
    runtime: c.runtime,
    energy: Number.isFinite(c.energy) ? c.energy : null,
  }));
  const names = [...new Set(calls.map((c) => c.region))];
  return {
    data: { values: calls },
    mark: { type: 'bar', opacity: 0.8 },
    encoding: {
      x: {
        field: 'start',
        type: 'quantitative',
        title: 'time since app start (s)',
        scale: { domain: x, nice: false },
      },
      x2: { field: 'stop' },
      y: { field: 'region', type: 'nominal', title: null, sort: names },
      color: { field: 'region', type: 'nominal', scale: colourScale(names), legend: null },
      tooltip: [
        { field: 'region' },
        { field: 'start', title: 'start (s)', format: '.3f' },
        { field: 'runtime', title: 'runtime (s)', format: '.4~g' },
        { field: 'energy', title: 'energy (J)', format: '.4~g' },
      ],
    },
  };
}

/** Renders a vega-lite spec to an SVG string in Node, made responsive and with tooltips. */
async function toSvg(spec: object): Promise<string> {
  const [vl, vega] = await Promise.all([
    importModule<typeof import('vega-lite')>('vega-lite'),
    importModule<typeof import('vega')>('vega'),
  ]);
  const compiled = vl.compile({
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    ...spec,
  } as Parameters<typeof vl.compile>[0]).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return withTitles(responsive(await view.toSVG()));
  } finally {
    view.finalize();
  }
}

/** The SVG scales with the page: its size becomes a maximum, the viewBox keeps the shape. */
function responsive(svg: string): string {
  return svg.replace(
    /^<svg([^>]*?) width="([\d.]+)" height="([\d.]+)"/,
    (_, rest: string, w: string) => `<svg${rest} style="width:100%;max-width:${w}px;height:auto"`,
  );
}

/**
 * Tooltips without scripts: vega labels each mark for screen readers (aria-label, from the
 * tooltip fields); the same text as an SVG <title> child is what browsers show on hover.
 */
function withTitles(svg: string): string {
  return svg.replace(
    /<(path|rect)([^>]*?) aria-label="([^"]*)"([^>]*?)\/>/g,
    (_, tag: string, before: string, label: string, after: string) =>
      `<${tag}${before} aria-label="${label}"${after}><title>${label}</title></${tag}>`,
  );
}

/** The plots of one round. */
async function roundPlots(report: Report, round: RoundReport, colours: object): Promise<string[]> {
  const plots: string[] = [];
  const x = xDomainOf(round);
  for (const source of report.sources) {
    const { power, energy } = powerAndEnergy(report, round, source);
    if (power.length === 0) continue;
    const tag = source.method === 'estimated' ? 'ESTIMATED' : source.method;
    const svg = await toSvg({
      vconcat: [
        {
          title: `${source.group} power (${tag})`,
          width: WIDTH,
          height: 220,
          layer: [lineLayer(power, { title: 'power (W)', max: robustMax(power) }, colours, x)],
        },
        {
          title: `${source.group} cumulative energy (${tag})`,
          width: WIDTH,
          height: 160,
          layer: [lineLayer(energy, { title: 'energy (J)' }, colours, x)],
        },
      ],
    });
    plots.push(`<figure>${svg}</figure>`);
  }
  const util: Point[] = [];
  report.series.forEach((s, i) => {
    if (s.kind !== 'util') return;
    round.times.forEach((t, k) => {
      const v = round.values[i]![k]!;
      if (Number.isFinite(v)) util.push({ t, value: v, series: s.id });
    });
  });
  if (util.length > 0)
    plots.push(
      `<figure>${await toSvg({
        title: 'utilisation (%)',
        width: WIDTH,
        height: 160,
        layer: [lineLayer(util, { title: 'utilisation (%)' }, colours, x)],
      })}</figure>`,
    );
  if (round.metrics.regions.length > 0)
    plots.push(
      `<figure>${await toSvg({
        title: 'regions',
        width: WIDTH,
        ...regionsTimeline(round, x),
      })}</figure>`,
    );
  return plots;
}

/** One self-contained HTML file: per round (selectable) its plots, then the text tables. */
export async function renderHtml(report: Report): Promise<string> {
  const names = [
    ...report.sources.flatMap((s) => s.series.map((id) => seriesLabel(id, s))),
    ...report.series.filter((s) => s.kind === 'util').map((s) => s.id),
  ];
  const colours = colourScale([...new Set(names)]);
  const sections: string[] = [];
  for (const [i, round] of report.rounds.entries()) {
    const plots = await roundPlots(report, round, colours);
    if (plots.length === 0) continue;
    const summary = `round ${esc(round.id)}${round.exit.status !== 0 ? ` (exit status ${round.exit.status})` : ''}`;
    sections.push(
      `<details${i === 0 ? ' open' : ''}><summary>${summary}</summary>\n${plots.join('\n')}\n</details>`,
    );
  }
  if (sections.length === 0)
    sections.push('<p>No energy, power or utilisation source was available: nothing to plot.</p>');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>joulegate: ${esc(report.app)} ${esc(report.runId)}</title>
<style>body{font-family:sans-serif;margin:1em auto;padding:0 1em;max-width:1100px}figure{margin:1em 0}
summary{font-size:1.2em;font-weight:bold;cursor:pointer;margin:.5em 0}pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style>
</head><body>
<h1>joulegate report: ${esc(report.app)}</h1>
${report.failed ? `<p><strong>FAILED run (${esc(report.failure)}): partial report.</strong></p>` : ''}
${sections.join('\n')}
<h2>Tables</h2>
<pre>${esc(renderText(report))}</pre>
</body></html>
`;
}
