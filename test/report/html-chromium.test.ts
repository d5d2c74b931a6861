import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { robustMax } from '../../src/report/html.js';
import { run, runCli } from '../helpers/cli.js';
import { onlyFile, readReport } from '../helpers/hdf5-reports.js';
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

const chromium = (args: string[]) =>
  run(
    CHROMIUM,
    ['--headless=new', '--no-sandbox', '--disable-gpu', '--enable-logging=stderr', '--v=0', ...args],
    {
      timeoutMs: 90_000,
    },
  );

describe('HTML report in headless Chromium', { skip }, () => {
  it('renders with no console errors; the screenshot is taken', async (t) => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: install Debian's chromium (.ci/run does)`);
    const shot = join(out, 'report.png');
    const r = await chromium([
      '--hide-scrollbars',
      '--window-size=1000,2400',
      `--screenshot=${shot}`,
      `file://${page}`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const png = readFileSync(shot);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.ok(png.length > 20_000, `screenshot of ${png.length} bytes`);
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

describe('failed reads in the HTML report', () => {
  it('draws a gap in the line, not a drop to 0', async () => {
    const report = readReport(onlyFile(out, /\.json$/));
    const round = report.rounds[0]!;
    const i = report.series.findIndex((s) => s.id === 'CPU_ENERGY-package-0');
    const failed = [5, 6, Math.floor(round.times.length / 2)];
    for (const k of failed) round.values[i]![k] = Number.NaN;
    const dir = tempDir();
    const edited = join(dir, 'edited.json');
    writeFileSync(
      edited,
      JSON.stringify(report, (_k, v) => (Number.isNaN(v) ? null : v)),
    );
    const r = await runCli(['export', edited, dir, 'html']);
    assert.equal(r.code, 0, r.stderr);
    const exported = readFileSync(onlyFile(dir, /\.html$/), 'utf8');
    const round0 = exported.slice(0, exported.indexOf('<summary>round 1'));
    const paths = (name: string) =>
      [
        ...round0.matchAll(new RegExp(`<path class="line" d="([^"]*)"[^>]*><title>series: ${name}<`, 'g')),
      ].map((m) => m[1]!);
    // Power and energy of package 0: one stretch more per gap (samples 5-6 fail together: one gap).
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
