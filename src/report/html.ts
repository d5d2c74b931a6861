import type { Report, RoundReport } from '../monitor/report-model.js';
import { importModule } from '../platform/dynamic-import.js';
import { renderText } from './text.js';

interface Point {
  t: number;
  watts: number;
  series: string;
}

const esc = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/**
 * Power over time of one group in one round: counters as ΔE/Δt at interval midpoints, power
 * readings as they are, estimates as utilisation × full-load watts. Gaps stay out (no line
 * across them).
 */
function powerPoints(report: Report, round: RoundReport, group: string, label: string): Point[] {
  const out: Point[] = [];
  const source = report.sources.find((s) => s.group === group);
  if (!source) return out;
  const scale = source.wattsPerUnit ?? 1;
  for (const id of source.series) {
    const i = report.series.findIndex((s) => s.id === id);
    const v = round.values[i]!;
    const t = round.times;
    const name = `${id}${source.method === 'estimated' ? ' (estimated)' : ''}${label}`;
    if (source.method === 'counter') {
      for (let k = 1; k < t.length; k++) {
        const dt = t[k]! - t[k - 1]!;
        const w = (v[k]! - v[k - 1]!) / dt;
        if (Number.isFinite(w) && dt > 0) out.push({ t: (t[k]! + t[k - 1]!) / 2, watts: w, series: name });
      }
    } else {
      t.forEach((tk, k) => {
        if (Number.isFinite(v[k]!)) out.push({ t: tk, watts: v[k]! * scale, series: name });
      });
    }
  }
  return out;
}

/** vega-lite spec of one group's power plot with region bands. */
function plotSpec(title: string, points: Point[], bands: { start: number; stop: number; region: string }[]) {
  const layers: object[] = [];
  if (bands.length > 0) {
    layers.push({
      data: { values: bands },
      mark: { type: 'rect', opacity: 0.15 },
      encoding: {
        x: { field: 'start', type: 'quantitative' },
        x2: { field: 'stop' },
        color: { field: 'region', type: 'nominal', legend: { title: 'region' } },
      },
    });
  }
  layers.push({
    data: { values: points },
    mark: { type: 'line', point: points.length < 200 },
    encoding: {
      x: { field: 't', type: 'quantitative', title: 'time since app start (s)' },
      y: { field: 'watts', type: 'quantitative', title: 'power (W)' },
      detail: { field: 'series', type: 'nominal' },
      strokeDash: { field: 'series', type: 'nominal', legend: { title: 'series' } },
    },
  });
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title,
    width: 720,
    height: 240,
    layer: layers,
  };
}

/** Renders a vega-lite spec to an SVG string in Node (no canvas, no browser). */
async function toSvg(spec: object): Promise<string> {
  const [vl, vega] = await Promise.all([
    importModule<typeof import('vega-lite')>('vega-lite'),
    importModule<typeof import('vega')>('vega'),
  ]);
  const compiled = vl.compile(spec as Parameters<typeof vl.compile>[0]).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** One self-contained HTML file: a power plot per measured group, region bands, the tables. */
export async function renderHtml(report: Report): Promise<string> {
  const plots: string[] = [];
  for (const source of report.sources) {
    const label = (r: RoundReport) => (report.rounds.length > 1 ? ` (round ${r.id})` : '');
    const points = report.rounds.flatMap((r) => powerPoints(report, r, source.group, label(r)));
    const bands = report.rounds.flatMap((r) =>
      r.metrics.regions.map((c) => ({ start: c.start, stop: c.stop, region: c.name })),
    );
    const tag = source.method === 'estimated' ? ' — ESTIMATED' : ` — ${source.method}`;
    const svg = await toSvg(plotSpec(`${source.group} power${tag}`, points, bands));
    plots.push(`<section><h2>${esc(source.group)} power${esc(tag)}</h2>${svg}</section>`);
  }
  if (plots.length === 0)
    plots.push('<p>No energy, power or utilisation source was available: nothing to plot.</p>');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>joulegate: ${esc(report.app)} ${esc(report.runId)}</title>
<style>body{font-family:sans-serif;margin:2em;max-width:1100px}pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style>
</head><body>
<h1>joulegate report: ${esc(report.app)}</h1>
${report.failed ? `<p><strong>FAILED run (${esc(report.failure)}): partial report.</strong></p>` : ''}
${plots.join('\n')}
<h2>Tables</h2>
<pre>${esc(renderText(report))}</pre>
</body></html>
`;
}
