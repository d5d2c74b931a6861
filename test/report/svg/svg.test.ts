import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lineChart } from '../../../src/report/svg/chart.js';
import { figure } from '../../../src/report/svg/figure.js';
import { escapeXml, significant, tickLabel } from '../../../src/report/svg/format.js';
import { layout, TITLE_HEIGHT } from '../../../src/report/svg/layout.js';
import { legend } from '../../../src/report/svg/legend.js';
import { decimate, linePath, type Samples } from '../../../src/report/svg/line.js';
import { type Axis, fixedAxis, valueAxis } from '../../../src/report/svg/scale.js';
import { timeline } from '../../../src/report/svg/timeline.js';
import { seededRandom } from '../../helpers/random.js';

const labels = (a: Axis) => a.ticks.map((t) => tickLabel(t, a.step, Math.max(...a.ticks.map(Math.abs))));
const HOSTILE = `<script>alert("x")</script> & 'q'`;
const samples = (values: number[]): Samples => ({ t: values.map((_, k) => k), value: values });

describe('value axis', () => {
  it('ends on a round tick above [0, 0.37], each tick exact', () => {
    const a = valueAxis([0, 0.37], 5)!;
    assert.deepEqual(a.domain, [0, 0.4]);
    assert.deepEqual(a.ticks, [0, 0.1, 0.2, 0.3, 0.4]);
    assert.deepEqual(labels(a), ['0.0', '0.1', '0.2', '0.3', '0.4']);
  });

  it('labels [0, 4.7e9] with SI prefixes', () => {
    const a = valueAxis([4.7e9, 1e9], 5)!;
    assert.deepEqual(a.domain, [0, 5e9]);
    assert.deepEqual(labels(a), ['0', '1G', '2G', '3G', '4G', '5G']);
  });

  it('starts at 0, or below the least value when it is negative', () => {
    assert.deepEqual(valueAxis([12.3, 12.9], 5)!.domain, [0, 14]);
    assert.deepEqual(valueAxis([-3, 7], 5)!.domain, [-4, 8]);
  });

  it('leaves headroom above the largest value: a line at 100 % is not on the frame', () => {
    for (const top of [100, 50, 40, 1])
      assert.ok(
        valueAxis([0, top], 4)!.domain[1] >= top * 1.05,
        `top ${top}: ${valueAxis([0, top], 4)!.domain}`,
      );
    assert.deepEqual(valueAxis([100], 4)!.domain, [0, 120]);
  });

  it('reaches a given top instead of the largest value (a clipped outlier)', () => {
    assert.deepEqual(valueAxis([10, 13, 400], 5, 13)!.domain, [0, 14]);
  });

  it('draws a single value and all zeros', () => {
    assert.deepEqual(valueAxis([5], 5)!.domain, [0, 6]);
    assert.deepEqual(valueAxis([0, 0], 5)!.domain, [0, 1]);
  });

  it('has nothing to plot when no value is finite', () => {
    assert.equal(valueAxis([Number.NaN, Number.NaN], 5), undefined);
    assert.equal(valueAxis([], 5), undefined);
  });
});

describe('time axis', () => {
  it('keeps the domain as given and puts round ticks inside it: [12.3, 12.9]', () => {
    const a = fixedAxis(12.3, 12.9, 5);
    assert.deepEqual(a.domain, [12.3, 12.9]);
    assert.deepEqual(a.ticks, [12.3, 12.4, 12.5, 12.6, 12.7, 12.8, 12.9]);
    assert.deepEqual(labels(a), ['12.3', '12.4', '12.5', '12.6', '12.7', '12.8', '12.9']);
  });

  it('widens a span of one instant so it can be drawn', () => {
    const a = fixedAxis(3, 3, 5);
    assert.ok(a.domain[0] < 3 && a.domain[1] > 3);
    assert.ok(a.ticks.includes(3));
  });

  it('labels hundredths without binary noise', () => {
    const a = fixedAxis(-0.004, 0.48, 10);
    assert.equal(a.step, 0.05);
    assert.ok(
      labels(a).every((l) => /^\d\.\d\d$/.test(l)),
      labels(a).join(' '),
    );
  });
});

describe('line path', () => {
  const x = (t: number) => t * 10;
  const y = (v: number) => 100 - v;

  it('breaks at a NaN (a gap, never a drop to 0)', () => {
    const d = linePath(samples([1, 2, Number.NaN, 3, 4]), x, y);
    assert.equal(d, 'M0,99L10,98M30,97L40,96');
  });

  it('draws only samples with both a time and a value (columns of unequal length)', () => {
    const d = linePath({ t: [0, 1, 2], value: [1, 2, 3] }, x, y);
    assert.equal(linePath({ t: [0, 1, 2], value: [1, 2, 3, 4] }, x, y), d);
    assert.equal(linePath({ t: [0, 1, 2, 3], value: [1, 2, 3] }, x, y), d);
    assert.deepEqual(Array.from(decimate({ t: [0, 1], value: [1, 2, 99] }, () => 0).value), [1, 2]);
  });

  it('draws a lone sample between gaps as a dot', () => {
    assert.equal(linePath(samples([Number.NaN, 5, Number.NaN]), x, y), 'M10,95h0');
  });

  it('rounds to 0.1 px and leaves out repeated points', () => {
    const d = linePath({ t: [0.123456, 0.123457, 1], value: [1.0001, 1.0002, 2] }, x, y);
    assert.equal(d, 'M1.2,99L10,98');
  });
});

describe('decimation', () => {
  it('keeps the least and the largest sample of every pixel column, in time order', () => {
    const random = seededRandom(7);
    const input = {
      t: Float64Array.from({ length: 100_000 }, (_, k) => k / 1000),
      value: Float64Array.from({ length: 100_000 }, () => random() * 100),
    };
    const column = (t: number) => t; // 100 columns of 1000 samples
    const out = decimate(input, column);
    const [times, values] = [Array.from(out.t), Array.from(out.value)];
    assert.ok(values.length <= 200, `${values.length} points`);
    for (let c = 0; c < 100; c++) {
      const inColumn = Array.from(input.value.subarray(c * 1000, (c + 1) * 1000));
      const kept = values.filter((_, k) => Math.floor(times[k]!) === c);
      assert.deepEqual(
        [...kept].sort((a, b) => a - b),
        [Math.min(...inColumn), Math.max(...inColumn)],
      );
    }
    assert.ok(times.every((t, k) => k === 0 || t > times[k - 1]!));
  });

  it('keeps gaps where they are, also inside a column', () => {
    const out = decimate(samples([1, 5, 3, Number.NaN, Number.NaN, 2, 8, 4]), () => 0);
    assert.deepEqual(Array.from(out.value), [1, 5, Number.NaN, 2, 8]);
    assert.deepEqual(Array.from(out.t), [0, 1, 3, 5, 6]);
  });
});

describe('charts', () => {
  const l = layout(0, 10, 400);

  it('has no chart when every sample is NaN', () => {
    const series = [{ name: 's', colour: '#000000', samples: samples([Number.NaN, Number.NaN]) }];
    assert.equal(lineChart({ title: 't', valueTitle: 'power (W)', height: 100, series }, l), undefined);
  });

  it('escapes series, region and title text, and gives every mark hover text', () => {
    const chart = lineChart(
      {
        title: HOSTILE,
        valueTitle: 'power (W)',
        height: 100,
        series: [{ name: HOSTILE, colour: '#0072B2', samples: samples([1, 2]) }],
      },
      l,
    )!;
    const bars = timeline(
      'regions',
      [HOSTILE],
      [{ row: HOSTILE, start: 1, stop: 2, colour: '#E69F00', label: `region: ${HOSTILE}` }],
      l,
    );
    const svg = figure([chart, bars, legend([{ name: HOSTILE, colour: '#0072B2' }], l.left)], HOSTILE);
    assert.doesNotMatch(svg, /<script|alert\("/);
    const shown = escapeXml(HOSTILE);
    assert.equal(shown, '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;');
    assert.ok(svg.includes(`<title>series: ${shown}; time (s): 1.000; W: 2</title></circle>`));
    assert.ok(svg.includes(`<title>region: ${shown}</title></rect>`));
    assert.ok(svg.split(`>${shown}</text>`).length - 1 >= 3, 'title, row label and legend');
  });

  it('marks a value above the axis top on the frame edge instead of a point outside it', () => {
    const series = [{ name: 's', colour: '#000000', samples: samples([1, 2, 50]) }];
    const chart = lineChart({ title: 't', valueTitle: 'power (W)', height: 100, series, top: 2 }, l)!;
    assert.equal(chart.body.match(/<circle class="point"/g)?.length, 2);
    const marks = [...chart.body.matchAll(/<path class="offscale" d="([^"]*)"><title>([^<]*)<\/title>/g)];
    assert.equal(marks.length, 1);
    assert.match(marks[0]![2]!, /W: 50 \(off the axis\)/);
    // Its tip on the frame's top edge (the panel's plot area starts at TITLE_HEIGHT).
    const ys = [...marks[0]![1]!.matchAll(/,([\d.]+)/g)].map((m) => Number(m[1]));
    assert.equal(Math.min(...ys), TITLE_HEIGHT);
  });

  it('is one responsive <svg> whose width fits the longest legend name', () => {
    const long = 'x'.repeat(300);
    const svg = figure([legend([{ name: long, colour: '#000000' }], 64)], 'legend');
    const width = Number(/viewBox="0 0 (\d+) \d+"/.exec(svg)![1]);
    assert.ok(width > 300 * 6, `${width} px`);
    assert.match(svg, new RegExp(`style="width:100%;max-width:${width}px;height:auto"`));
  });

  it('formats hover values to four significant digits', () => {
    assert.deepEqual(
      [0.060512, 2.54, 123456, Number.NaN].map((v) => significant(v)),
      ['0.06051', '2.54', '123500', 'n/a'],
    );
  });
});
