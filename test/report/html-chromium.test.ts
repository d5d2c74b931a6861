import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Report } from '../../src/monitor/model/report-model.js';
import { robustMax } from '../../src/report/html.js';
import { run, runCli } from '../helpers/cli.js';
import { onlyFile, readReport } from '../helpers/hdf5-reports.js';
import { until } from '../helpers/poll.js';
import { paddedStat, tickerSource } from '../helpers/proc-stat.js';
import { needsTool } from '../helpers/requirements.js';
import { copyFixture, tempDir } from '../helpers/tmp.js';

const skip = needsTool('chromium');

/**
 * The HTML report in a real browser: Debian's headless Chromium renders the page, takes a
 * screenshot and dumps the DOM it parsed; the checks run on what it rendered.
 */
const CHROMIUM = '/usr/bin/chromium';
const RAPL = 'sys/class/powercap';
const out = tempDir();
const root = copyFixture('energy/amd-epyc');
const stat = paddedStat(root);
/** A region name that is markup: it must show as text, whole, and never run. */
const HOSTILE = `outer <script>console.error("ran")</script> & "q" 'a'`;
// Both packages' counters advance (at different rates) while regions run and CPUs tick.
const app = join(out, 'app.mjs');
writeFileSync(
  app,
  `${tickerSource(stat, 1, 1)}
import { openSync, readFileSync, writeSync } from 'node:fs';
import { measure, region } from ${JSON.stringify(new URL('../../dist/index.js', import.meta.url).pathname)};
const zones = [0, 1].map((z) => ${JSON.stringify(join(root, RAPL))} + '/intel-rapl:' + z + '/energy_uj');
const energy = zones.map((z) => Number(readFileSync(z, 'utf8')));
// Overwritten in place, never truncated (the value only grows), so no read sees it empty.
const fds = zones.map((z) => openSync(z, 'r+'));
const counters = setInterval(() => fds.forEach((fd, i) => writeSync(fd, String((energy[i] += (i + 1) * 150000)), 0)), 10);
startTicking(5);
const outer = region(${JSON.stringify(HOSTILE)});
await measure('step', () => new Promise((r) => setTimeout(r, 60)));
await measure('step', () => new Promise((r) => setTimeout(r, 80)));
outer.end();
clearInterval(counters);
stopTicking();
`,
);
const monitored = await runCli(
  [
    'monitor',
    '--sampling-period',
    '0.02',
    '-f',
    'html,json',
    '--data-out',
    out,
    '-n',
    'page',
    '--rounds',
    '2',
    '--',
    process.execPath,
    app,
  ],
  { env: { JOULEGATE_SYSROOT: root }, cwd: out },
);
assert.equal(monitored.code, 0, monitored.stderr);
const page = onlyFile(out, /\.html$/);
const html = readFileSync(page, 'utf8');

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Debian's Chromium, headless, with a fresh profile and nothing that reaches the network. */
const chromium = (args: string[]) =>
  run(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${tempDir('joulegate-chromium-')}`,
      '--enable-logging=stderr',
      '--v=0',
      ...args,
    ],
    {
      timeoutMs: 90_000,
    },
  );

/** A PNG of the page 1000 px wide and `height` px high at `shot`; Chromium's run for its log. */
async function screenshot(page: string, shot: string, height: number) {
  const r = await chromium([
    '--hide-scrollbars',
    `--window-size=1000,${height}`,
    `--screenshot=${shot}`,
    `file://${page}`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const png = readFileSync(shot);
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.ok(png.length > 20_000, `screenshot of ${png.length} bytes`);
  return r;
}

describe('HTML report in headless Chromium', { skip }, () => {
  it('renders with no console errors; the screenshot is taken', async (t) => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: install Debian's chromium (.ci/run does)`);
    const shot = join(out, 'report.png');
    const r = await screenshot(page, shot, 2400);
    // Console messages reach Chromium's log as CONSOLE lines; the page has none to give.
    assert.doesNotMatch(r.stderr, /CONSOLE|Uncaught/);
    t.diagnostic(`screenshot: ${shot} (JOULEGATE_KEEP_TMP=1 keeps it)`);
  });

  it('gives every series of a plot its own colour, full legend names, tooltips, a responsive width', async () => {
    const r = await chromium(['--dump-dom', `file://${page}`]);
    assert.equal(r.code, 0, r.stderr);
    const dom = r.stdout;
    const figures = [...dom.matchAll(/<figure>([\s\S]*?)<\/figure>/g)].map((m) => m[1]!);
    // Per round: cpu power + cumulative energy, utilisation, regions.
    assert.equal(figures.length, 6, `${figures.length} figures`);
    let checked = 0;
    for (const figure of figures) {
      // One <path> per series, its hover text naming the series.
      const lines = [
        ...figure.matchAll(
          /<path class="line"[^>]*stroke="(#[0-9A-Fa-f]{6})"[^>]*><title>series: ([^<]+)<\/title>/g,
        ),
      ];
      const series = new Set(lines.map((l) => l[2]));
      const strokes = new Set(lines.map((l) => l[1]));
      if (series.size >= 2) {
        assert.ok(strokes.size >= 2, `${series.size} series drawn in ${strokes.size} colour(s)`);
        assert.equal(strokes.size, series.size, 'one colour per series');
        checked++;
      }
    }
    assert.equal(checked, 2, 'the cpu figure of each round has two packages');
    for (const name of ['CPU_ENERGY-package-0', 'CPU_ENERGY-package-1'])
      assert.match(dom, new RegExp(`<text[^>]*>${name}</text>`), `legend shows ${name} whole`);
    assert.doesNotMatch(dom, /<text[^>]*>[^<]*…<\/text>/, 'no legend label is cut');
    assert.match(dom, /<title>[^<]*series: CPU_ENERGY-package-1[^<]*<\/title>/, 'hover text without scripts');
    assert.match(dom, /<title>[^<]*region: step[^<]*runtime \(s\): [\d.]+/);
    // The region name is text (Chromium writes < > & back as entities in text nodes), never an element.
    const shown = HOSTILE.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    assert.match(dom, new RegExp(`<text[^>]*>${escapeRegExp(shown)}</text>`), 'row label, whole');
    assert.match(dom, new RegExp(`<title>region: ${escapeRegExp(shown)}; start \\(s\\): `));
    assert.doesNotMatch(dom, /<script/i);
    assert.doesNotMatch(html, /<script/i);
    assert.match(dom, /<svg[^>]* style="width:100%;max-width:\d+px;height:auto"/);
    assert.match(dom, /<details open=""><summary>round 0<\/summary>/);
    assert.match(dom, /<details><summary>round 1<\/summary>/);
    assert.match(html, /cpu cumulative energy \(counter\)/);
    assert.match(html, /utilisation \(%\)/);
  });
});

/** An edited report (a failed read is null in JSON) as `joulegate export` writes its HTML into `dir`. */
async function exportHtml(report: Report, dir: string): Promise<void> {
  const edited = join(dir, 'edited.json');
  writeFileSync(
    edited,
    JSON.stringify(report, (_k, v) => (Number.isNaN(v) ? null : v)),
  );
  const r = await runCli(['export', edited, dir, 'html']);
  assert.equal(r.code, 0, r.stderr);
}

describe('failed reads in the HTML report', () => {
  it('draws a gap in the line, not a drop to 0', async () => {
    const report = readReport(onlyFile(out, /\.json$/));
    const round = report.rounds[0]!;
    const i = report.series.findIndex((s) => s.id === 'CPU_ENERGY-package-0');
    // Two gaps, each with samples on both sides, however many samples the run took: samples 2-3
    // together, and the third from the end (on a fast machine a gap in the middle met 5-6).
    const count = round.times.length;
    assert.ok(count >= 9, `round 0 has ${count} samples; the test needs 9`);
    const failed = [2, 3, count - 3];
    for (const k of failed) round.values[i]![k] = Number.NaN;
    const dir = tempDir();
    await exportHtml(report, dir);
    const exported = readFileSync(onlyFile(dir, /\.html$/), 'utf8');
    const round0 = exported.slice(0, exported.indexOf('<summary>round 1'));
    const paths = (name: string) =>
      [
        ...round0.matchAll(new RegExp(`<path class="line" d="([^"]*)"[^>]*><title>series: ${name}<`, 'g')),
      ].map((m) => m[1]!);
    // Power and energy of package 0: one stretch more per gap (samples 2-3 fail together: one gap).
    for (const d of paths('CPU_ENERGY-package-0')) assert.equal(d.match(/M/g)!.length, 3, d);
    for (const d of paths('CPU_ENERGY-package-1')) assert.equal(d.match(/M/g)!.length, 1, d);
    assert.equal(paths('CPU_ENERGY-package-0').length, 2);
  });
});

describe('power plot y-scale', () => {
  it('ignores a final interval under half the median when it sets the top, not when it draws', () => {
    const counter = { t: [0.01, 0.03, 0.05, 0.07, 0.0805], value: [10, 11, 12, 13, 400] };
    const intervals = [0.02, 0.02, 0.02, 0.02, 0.001];
    assert.equal(robustMax([{ ...counter, dt: intervals }]), 13);
    // A second series: the median interval is over both, and its largest value counts too.
    const other = { t: [0.02, 0.04], value: [15, Number.NaN], dt: [0.02, 0.02] };
    assert.equal(robustMax([{ ...counter, dt: intervals }, other]), 15);
    assert.equal(robustMax([counter]), undefined, 'power readings: the largest value scales');
  });
});

/**
 * A ~2 s app at the default 1 s period and at 0.1 s: both packages draw the same (varying)
 * power; the CPUs are half busy all along. The two counters are separate files, so a sample may
 * read one before and one after the app's write to both: package 1's readings are made package
 * 0's in the report, which `joulegate export` turns into the page (the monitor's own renderer).
 */
async function periodPage(period: string | undefined) {
  const dir = tempDir();
  const fixture = copyFixture('energy/amd-epyc');
  const statPath = paddedStat(fixture);
  const stat0 = readFileSync(statPath, 'utf8');
  // The CPUs tick all along, as a real /proc/stat does, from before the monitor's first sample.
  const ticker = join(dir, 'ticker.mjs');
  writeFileSync(ticker, `${tickerSource(statPath, 1, 1)}\nstartTicking(5);\n`);
  const ticking = spawn(process.execPath, [ticker], { stdio: 'ignore' });
  after(() => ticking.kill());
  await until('the ticker has started', () => readFileSync(statPath, 'utf8') !== stat0, 30_000, 20);
  const twin = join(dir, 'twin.mjs');
  writeFileSync(
    twin,
    `import { openSync, readFileSync, writeSync } from 'node:fs';
const zones = [0, 1].map((z) => ${JSON.stringify(join(fixture, RAPL))} + '/intel-rapl:' + z + '/energy_uj');
const energy = zones.map((z) => Number(readFileSync(z, 'utf8')));
const fds = zones.map((z) => openSync(z, 'r+'));
let step = 0;
// 10-30 W per package, the same for both, rising and falling.
const counters = setInterval(() => {
  step++;
  const uj = Math.round(200000 + 100000 * Math.sin(step / 40));
  fds.forEach((fd, i) => writeSync(fd, String((energy[i] += uj)), 0));
}, 10);
await new Promise((r) => setTimeout(r, 2000));
clearInterval(counters);
`,
  );
  const periodArgs = period === undefined ? [] : ['--sampling-period', period];
  const r = await runCli(
    ['monitor', ...periodArgs, '-f', 'json', '--data-out', dir, '-n', 'twin', '--', process.execPath, twin],
    { env: { JOULEGATE_SYSROOT: fixture }, cwd: dir },
  );
  assert.equal(r.code, 0, r.stderr);
  const report = readReport(onlyFile(dir, /\.json$/));
  const [p0, p1] = ['CPU_ENERGY-package-0', 'CPU_ENERGY-package-1'].map((id) =>
    report.series.findIndex((x) => x.id === id),
  );
  for (const round of report.rounds) round.values[p1!] = [...round.values[p0!]!];
  await exportHtml(report, dir);
  return { dir, page: onlyFile(dir, /\.html$/), report };
}

/** A plot area as Chromium parsed it: the panel's title, its frame and the marks inside. */
interface PlotArea {
  title: string;
  frame: { x: number; y: number; w: number; h: number };
  body: string;
}

function plotAreas(dom: string): PlotArea[] {
  const re =
    /<text class="title"[^>]*>([^<]*)<\/text>[\s\S]*?<svg x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"[^>]*>([\s\S]*?)<\/svg>/g;
  return [...dom.matchAll(re)].map((m) => ({
    title: m[1]!,
    frame: { x: Number(m[2]), y: Number(m[3]), w: Number(m[4]), h: Number(m[5]) },
    body: m[6]!,
  }));
}

/** Point marks of one series in a plot area: coordinates and hover text. */
const pointsOf = (area: PlotArea, name: string) =>
  [
    ...area.body.matchAll(
      new RegExp(
        `<circle class="point" cx="([-\\d.]+)" cy="([-\\d.]+)"[^>]*><title>series: ${name}; time \\(s\\): ([-\\d.]+); [^:]+: ([-\\d.e]+)</title>`,
        'g',
      ),
    ),
  ].map((m) => ({ x: Number(m[1]), y: Number(m[2]), t: Number(m[3]), v: Number(m[4]) }));

/** Vertices of one series' line. */
function lineOf(area: PlotArea, name: string): { x: number; y: number }[] {
  const d = new RegExp(`<path class="line" d="([^"]*)"[^>]*><title>series: ${name}</title>`).exec(area.body);
  assert.ok(d, `${area.title}: no line for ${name}`);
  return [...d[1]!.matchAll(/[ML]([-\d.]+),([-\d.]+)/g)].map((m) => ({ x: Number(m[1]), y: Number(m[2]) }));
}

/** x of the off-axis marks (of one series, or all). */
const offscale = (area: PlotArea, name = '') =>
  [
    ...area.body.matchAll(
      new RegExp(
        `<path class="offscale" d="M([-\\d.]+),[-\\d.]+L([-\\d.]+),[^"]*"><title>series: ${name}`,
        'g',
      ),
    ),
  ].map((m) => (Number(m[1]) + Number(m[2])) / 2);

describe('HTML report at any sampling period, in headless Chromium', { skip }, () => {
  for (const [period, keep] of [
    [undefined, 'html-1s.png'],
    ['0.1', 'html-0.1s.png'],
  ] as const) {
    it(`at ${period ?? 'the default 1'} s: a point per sample in the frame, energy from 0, utilisation throughout, twins told apart`, async (t) => {
      const { dir, page, report } = await periodPage(period);
      const round = report.rounds[0]!;
      const samples = round.times.length;
      const shot = join(dir, keep);
      await screenshot(page, shot, 1500);
      t.diagnostic(`${samples} samples; screenshot: ${shot} (JOULEGATE_KEEP_TMP=1 keeps it)`);
      const r = await chromium(['--dump-dom', `file://${page}`]);
      assert.equal(r.code, 0, r.stderr);
      const round0 = r.stdout.slice(0, r.stdout.indexOf('<h2>Tables'));
      const areas = plotAreas(round0);
      const find = (title: string) => {
        const a = areas.find((x) => x.title === title);
        assert.ok(a, `no plot "${title}" in ${areas.map((x) => x.title).join(', ')}`);
        return a;
      };
      const power = find('cpu power (counter)');
      const energy = find('cpu cumulative energy (counter)');
      const util = find('utilisation (%)');
      const cpuPower = round.metrics.host.groups.cpu!.power;
      for (const name of ['CPU_ENERGY-package-0', 'CPU_ENERGY-package-1']) {
        // Every sample after the first ends an interval: a power point each, on the frame or marked.
        const p = pointsOf(power, name);
        assert.equal(p.length + offscale(power, name).length, samples - 1, `${name}: power points`);
        // Cumulative energy: a point at every sample, 0 at the first (just before the app starts).
        const e = pointsOf(energy, name);
        assert.equal(e.length, samples, `${name}: energy points`);
        assert.equal(e[0]!.v, 0);
        assert.ok(e[0]!.t <= 0 && e[0]!.t > -0.5, `first energy point at ${e[0]!.t} s`);
        for (const area of [power, energy]) {
          const { x, y, w, h } = area.frame;
          for (const q of pointsOf(area, name))
            assert.ok(
              q.x >= x && q.x <= x + w && q.y >= y && q.y <= y + h,
              `${area.title}: ${JSON.stringify(q)} outside`,
            );
          // A vertex beyond the frame has its off-axis mark.
          for (const v of lineOf(area, name))
            if (v.y < y - 0.5 || v.y > y + h + 0.5)
              assert.ok(
                offscale(area).some((mx) => Math.abs(mx - v.x) <= 1),
                `${area.title}: vertex ${JSON.stringify(v)} unmarked`,
              );
        }
      }
      // The axis reaches the tables' CPU power: its top tick is at least that.
      const ticks = [
        ...round0
          .slice(round0.indexOf('cpu power (counter)'))
          .matchAll(/text-anchor="end">([\d.]+)<\/text>/g),
      ];
      assert.ok(Number(ticks.at(-1)![1]) >= cpuPower, `axis top ${ticks.at(-1)![1]} < table ${cpuPower} W`);
      // Identical series: the second is dashed, the legend says it is the same.
      const strokes = [
        ...power.body.matchAll(/<path class="line"[^>]*?( stroke-dasharray="[^"]*")?><title>/g),
      ];
      assert.equal(strokes.length, 2);
      assert.equal(strokes[0]![1], undefined);
      assert.match(strokes[1]![1] ?? '', /stroke-dasharray/);
      assert.match(
        round0,
        /<text class="note"[^>]*>\(same values as CPU_ENERGY-package-0: drawn dashed over it\)<\/text>/,
      );
      // Utilisation over the whole run: its line from the frame's left edge to its right.
      const u = lineOf(util, 'CPU_UTILIZATION');
      const xs = u.map((v) => v.x);
      assert.ok(Math.min(...xs) <= util.frame.x + 1, `utilisation starts at x=${Math.min(...xs)}`);
      assert.ok(
        Math.max(...xs) >= util.frame.x + util.frame.w - 1,
        `utilisation ends at x=${Math.max(...xs)}`,
      );
      assert.equal(pointsOf(util, 'CPU_UTILIZATION').length, samples - 1);
    });
  }
});
