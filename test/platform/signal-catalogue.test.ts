import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { metricRules, NodeSampler } from '../../src/cluster/exporter/node-metrics.js';
import { NO_FILTERS, selectSeries } from '../../src/monitor/signals.js';
import { Aggregation } from '../../src/platform/aggregation.js';
import type { BackendContext } from '../../src/platform/backend.js';
import { DomainType } from '../../src/platform/domains.js';
import { FormatType } from '../../src/platform/format.js';
import { PlatformIO } from '../../src/platform/platform-io.js';
import { availableSensors, deviceTypeOf } from '../../src/platform/sensors.js';
import {
  type CatalogueEntry,
  DEVICE_GROUPS,
  ENERGY_DEVICE_OF_GROUP,
  entryNamed,
  isSeriesKind,
  KIND_UNITS,
  namesOf,
  SENSOR_DEVICE_OF_GROUP,
  SIGNAL_CATALOGUE,
  type SignalCatalogue,
  type SignalKind,
} from '../../src/platform/signal-catalogue.js';
import { Behavior, Units } from '../../src/platform/signal-info.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { type SignalDef, TableBackend } from '../../src/platform/table-backend.js';
import { loadTopology } from '../../src/platform/topology.js';
import { FIXTURES } from '../helpers/tmp.js';

/** The unit word of a Prometheus metric name for each kind the exporter may publish. */
const METRIC_UNIT_WORD: Partial<Record<SignalKind, string>> = {
  energy: '_joules_total',
  power: '_watts',
  power_limit: '_watts',
  util: '_ratio',
  frequency: '_hertz',
  temperature: '_celsius',
  bytes: '_bytes_total',
};
/** Kinds whose values only grow: the exporter publishes them as counters. */
const CUMULATIVE: readonly SignalKind[] = ['energy', 'bytes'];

describe('signal catalogue rows', () => {
  it('each row is consistent in itself', () => {
    for (const e of SIGNAL_CATALOGUE) {
      const where = `row ${e.alias}`;
      assert.ok(DEVICE_GROUPS.includes(e.group), `${where}: group ${e.group}`);
      assert.equal(e.direction !== undefined, e.kind === 'bytes', `${where}: a direction iff bytes`);
      if (e.outsidePlatform) assert.equal(e.group, 'gpu', `${where}: only discrete GPUs are outside`);
      if (!e.metric) continue;
      const m = e.metric;
      assert.match(m.name, /^joulegate_[a-z_]+$/, where);
      assert.ok(m.name.endsWith(METRIC_UNIT_WORD[e.kind] ?? '\0'), `${where}: ${m.name} for kind ${e.kind}`);
      assert.equal(m.type === 'counter', CUMULATIVE.includes(e.kind), `${where}: counter iff cumulative`);
      assert.equal(m.type === 'counter', m.name.endsWith('_total'), `${where}: counters end in _total`);
      const board = !e.perDevice || e.group === 'board';
      assert.equal(m.device === 'board', board, `${where}: board label iff read for the board`);
      if (m.device === 'gpu') assert.equal(e.group, 'gpu', where);
      assert.ok(m.help.endsWith('.') && m.help.length > 10, `${where}: help is a sentence`);
    }
  });

  it('units belong to kinds: SI kinds declare their unit, the rest check none', () => {
    assert.deepEqual(KIND_UNITS, {
      energy: Units.Joules,
      power: Units.Watts,
      frequency: Units.Hertz,
      temperature: Units.Celsius,
      power_limit: Units.Watts,
    });
  });

  it('a name, an exporter metric and an alias belong to one row', () => {
    const names = SIGNAL_CATALOGUE.flatMap(namesOf);
    assert.equal(new Set(names).size, names.length, 'a name in two rows');
    const metrics = SIGNAL_CATALOGUE.flatMap((e) => (e.metric ? [e.metric.name] : []));
    assert.equal(new Set(metrics).size, metrics.length, 'an exporter metric in two rows');
    for (const e of SIGNAL_CATALOGUE) for (const n of namesOf(e)) assert.equal(entryNamed(n), e, n);
  });

  it('energy rows come before power rows (the monitor uses power only without a counter)', () => {
    const lastEnergy = SIGNAL_CATALOGUE.findLastIndex((e) => e.kind === 'energy');
    const firstPower = SIGNAL_CATALOGUE.findIndex((e) => e.kind === 'power');
    assert.ok(lastEnergy < firstPower);
  });
});

/** A backend of table rows the test gives: each low-level name with its aliases or `feeds`. */
class RowsBackend extends TableBackend<null> {
  readonly id = 'rows';
  readonly name = 'ROWS';
  readonly description = 'signals the test lists';

  constructor(private readonly rows: readonly Omit<SignalDef<null>, 'read'>[]) {
    super();
  }

  protected snapshot(): null {
    return null;
  }

  protected define(_ctx: BackendContext): { signals: SignalDef<null>[] } {
    return { signals: this.rows.map((r) => ({ ...r, read: () => 1 })) };
  }
}

const base = {
  description: 'a test signal',
  aggregation: Aggregation.Sum,
  format: FormatType.Double,
  behavior: Behavior.Variable,
};

async function platformOf(rows: readonly Omit<SignalDef<null>, 'read'>[]) {
  const sysroot = new Sysroot(`${FIXTURES}energy/amd-epyc`);
  const topology = loadTopology(sysroot);
  const pio = new PlatformIO(topology);
  const backend = new RowsBackend(rows);
  await backend.setup({ sysroot, topology });
  pio.register(backend);
  return { pio, backend };
}

/** What each reader makes of the platform's signals under one catalogue. */
function readers(pio: PlatformIO, backend: RowsBackend, catalogue: SignalCatalogue) {
  return {
    series: selectSeries(pio, NO_FILTERS, catalogue).series.map((s) => [s.signal, s.group, s.kind]),
    metrics: new NodeSampler(pio, metricRules(catalogue)).channels.map((c) => [
      c.rule.metric,
      c.index,
      c.rule.energy,
    ]),
    sensors: availableSensors(backend, pio.topology, catalogue),
  };
}

describe('the readers read the same row', () => {
  /** A new source's quantity: a fan-like board sensor, fed by an alias and by a raw register. */
  const fan: CatalogueEntry = {
    alias: 'FAN_POWER',
    group: 'net',
    kind: 'power',
    perDevice: false,
    metric: { name: 'joulegate_fan_power_watts', help: 'Power of the fans.', type: 'gauge', device: 'board' },
  };
  const rows = [
    { ...base, name: 'FAN_SENSOR', aliases: ['FAN_POWER'], domain: DomainType.Board, units: Units.Watts },
    { ...base, name: 'FAN_RAW#', feeds: 'FAN_POWER', domain: DomainType.Package, units: Units.None },
  ];

  it('a row added to the catalogue shows up in the monitor, the exporter and sensors', async () => {
    const { pio, backend } = await platformOf(rows);
    const withFan = readers(pio, backend, [...SIGNAL_CATALOGUE, fan]);
    assert.deepEqual(withFan.series, [['FAN_POWER', 'net', 'power']]);
    assert.deepEqual(withFan.metrics, [['joulegate_fan_power_watts', 0, undefined]]);
    assert.deepEqual(withFan.sensors, {
      'ROWS::FAN_SENSOR': ['rows', 'net', 'W'],
      'ROWS::FAN_RAW#-package-0': ['rows', 'net', ''],
      'ROWS::FAN_RAW#-package-1': ['rows', 'net', ''],
    });
    assert.equal(deviceTypeOf(backend, 'ROWS::FAN_RAW#', [...SIGNAL_CATALOGUE, fan]), 'net');
    // Without the row no reader knows the quantity: sensors fall back on the domain.
    const without = readers(pio, backend, SIGNAL_CATALOGUE);
    assert.deepEqual(without.series, []);
    assert.deepEqual(without.metrics, []);
    assert.deepEqual(without.sensors, {
      'ROWS::FAN_SENSOR': ['rows', 'node', 'W'],
      'ROWS::FAN_RAW#-package-0': ['rows', 'cpu', ''],
      'ROWS::FAN_RAW#-package-1': ['rows', 'cpu', ''],
    });
    await pio.close();
  });

  it('units the row does not allow keep a signal from the monitor and the exporter alike', async () => {
    const { pio, backend } = await platformOf([{ ...rows[0]!, units: Units.Joules }]);
    const r = readers(pio, backend, [fan]);
    assert.deepEqual(r.series, []);
    assert.deepEqual(r.metrics, []);
    assert.equal(r.sensors['ROWS::FAN_SENSOR']![1], 'net', 'sensors list it with its meaning');
    await pio.close();
  });

  for (const entry of SIGNAL_CATALOGUE) {
    it(`${entry.alias}: one signal of this row means the same to every reader`, async () => {
      // Per device at the package (every row the exporter labels by package or board reads there).
      const domain = entry.perDevice && entry.group !== 'board' ? DomainType.Package : DomainType.Board;
      const units = KIND_UNITS[entry.kind] ?? Units.None;
      const { pio, backend } = await platformOf([
        { ...base, name: `${entry.alias}_LOW`, aliases: [entry.alias], domain, units },
      ]);
      const r = readers(pio, backend, SIGNAL_CATALOGUE);
      const count = domain === DomainType.Board || !entry.perDevice ? 1 : 2;
      const device = SENSOR_DEVICE_OF_GROUP[entry.group];
      assert.deepEqual(
        Object.values(r.sensors).map(([, d]) => d),
        Array(domain === DomainType.Board ? 1 : 2).fill(device),
      );
      assert.deepEqual(
        r.series,
        isSeriesKind(entry.kind) ? Array(count).fill([entry.alias, entry.group, entry.kind]) : [],
      );
      const energy = entry.kind === 'energy' ? ENERGY_DEVICE_OF_GROUP[entry.group] : undefined;
      const exported = entry.metric && entry.metric.device !== 'gpu';
      const metricCount = entry.metric?.device === 'package' ? 2 : 1;
      assert.deepEqual(
        r.metrics,
        exported ? Array.from({ length: metricCount }, (_, i) => [entry.metric!.name, i, energy]) : [],
      );
      await pio.close();
    });
  }
});
