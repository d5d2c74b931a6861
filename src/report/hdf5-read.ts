import { closeSync, openSync, readSync } from 'node:fs';
import type { IdlePolicy } from '../attribution/engine.js';
import type { AttributedGroup } from '../attribution/meter.js';
import type { AttributionReport } from '../attribution/summary.js';
import type {
  AppExit,
  GroupMetrics,
  HostMetrics,
  HostRule,
  HostTotal,
  RegionCallMetrics,
  RegionEvent,
  Report,
  RoundReport,
  SourceInfo,
} from '../monitor/model/report-model.js';
import { stat, summarizeRegions } from '../monitor/model/round-stats.js';
import { reportUnits } from '../monitor/model/units.js';
import type { Diagnostic } from '../platform/backend.js';
import { errorMessage, JoulegateError, ParseError, shortValue } from '../platform/errors.js';
import type { DeviceGroup, EnergyMethod, SeriesKind, SeriesSpec } from '../platform/signal-catalogue.js';
import {
  GROUP_ENERGY_COLUMN,
  type GROUP_VALUE_KEYS,
  type Group,
  groupValuePlace,
  type H5,
  HOST_TOTAL_ATTRS,
  loadH5,
  MULTI_RUN_ATTRS,
  nodeName,
  RUN_ATTRS,
  SENSOR_ATTRS,
  SOURCE_ATTRS,
  TABLES,
} from './hdf5-layout.js';
import {
  type Attrs,
  attrsOf,
  idOf,
  num,
  optionalText,
  requiredNum,
  TreeError,
  TreeReader,
  text,
  textAttrsExcept,
} from './hdf5-tree.js';

/**
 * Reads the report back from the tree hdf5.ts writes: perun's nodes, metrics and raw data,
 * and joulegate's attributes and tables (hdf5-layout.ts). Statistics that are functions of the
 * rounds and are not in the tree (the estimated energy summary, the region summary) are
 * computed from the rounds read, as the monitor computes them.
 */
export class JoulegateTreeReader extends TreeReader {
  /** The runs (MULTI_RUNs) of the file, in the file's order: one, or an accumulating file's all. */
  runs(file: Group): Group[] {
    const runs = this.children(this.group(this.firstChild(file), 'nodes'));
    if (runs.length === 0) throw new TreeError(`${this.firstChild(file).path} holds no run`);
    return runs;
  }

  /** Run `runId` of the file (JoulegateError naming the runs there are), or its latest. */
  pick(file: Group, runId?: string): Group {
    const runs = this.runs(file);
    if (runId !== undefined) {
      const found = runs.find((r) => idOf(r) === runId);
      if (!found)
        throw new JoulegateError(
          `no run ${runId} in this file (it has ${runs.map((r) => idOf(r)).join(', ')})`,
        );
      return found;
    }
    const when = (r: Group) => {
      const a = attrsOf(r);
      return (
        optionalText(a, MULTI_RUN_ATTRS.createdExact, r.path) ??
        optionalText(a, MULTI_RUN_ATTRS.created, r.path) ??
        ''
      );
    };
    return runs.reduce((latest, r) => (when(r) >= when(latest) ? r : latest));
  }

  report(file: Group, runId?: string): Report {
    return this.multiRunReport(this.pick(file, runId));
  }

  /** Every run of the file as a report, in the file's order. */
  reports(file: Group): Report[] {
    return this.runs(file).map((multi) => this.multiRunReport(multi));
  }

  multiRunReport(multi: Group): Report {
    const attrs = attrsOf(multi);
    const runs = this.children(this.group(multi, 'nodes'));
    if (runs.length === 0) throw new TreeError(`${multi.path} has no rounds`);
    const firstHost = this.firstChild(this.group(runs[0]!, 'nodes'));
    const series = this.series(firstHost);
    const rounds = runs.map((run) => this.round(run, series));
    // A Stats over no measured value is no metric in the file (hdf5.ts): all NaN, as stat([]) is.
    const summaryOf = (metric: string) => this.optionalStats(multi, metric) ?? stat([]);
    const omittedRounds = num(attrs, MULTI_RUN_ATTRS.omittedRounds, multi.path);
    return {
      kind: 'joulegate-report',
      version: 1,
      app: text(attrs, MULTI_RUN_ATTRS.appName, multi.path),
      runId: idOf(multi),
      failed: text(attrs, MULTI_RUN_ATTRS.failed, multi.path) === 'true',
      failure: text(attrs, MULTI_RUN_ATTRS.failure, multi.path),
      // Files written before joulegate_created kept the exact time in execution_dt.
      created:
        optionalText(attrs, MULTI_RUN_ATTRS.createdExact, multi.path) ??
        text(attrs, MULTI_RUN_ATTRS.created, multi.path),
      host: idOf(firstHost),
      metadata: textAttrsExcept(attrsOf(runs[0]!), [
        ...Object.values(RUN_ATTRS),
        ...Object.values(HOST_TOTAL_ATTRS),
      ]),
      config: textAttrsExcept(attrs, Object.values(MULTI_RUN_ATTRS)),
      samplingPeriod: requiredNum(attrs, MULTI_RUN_ATTRS.samplingPeriod, multi.path),
      priceUnit: text(attrs, MULTI_RUN_ATTRS.priceUnit, multi.path),
      units: reportUnits(text(attrs, MULTI_RUN_ATTRS.priceUnit, multi.path)),
      series,
      sources: this.sources(firstHost, series),
      unavailable: this.diagnostics(multi),
      warmupRounds: requiredNum(attrs, MULTI_RUN_ATTRS.warmupRounds, multi.path),
      rounds,
      ...(omittedRounds ? { omittedRounds } : {}),
      summary: {
        runtime: summaryOf('runtime'),
        energy: summaryOf('energy'),
        power: summaryOf('power'),
        estimated_energy: stat(rounds.map((r) => r.metrics.host.estimatedEnergy)),
        co2: summaryOf('co2'),
        money: summaryOf('money'),
      },
      regions: summarizeRegions(rounds.map((r) => r.metrics)),
      ...this.attribution(multi),
    };
  }

  /** The attribution section (TABLES.attribution), when the run had one. */
  attribution(multi: Group): { attribution?: AttributionReport } {
    const g = this.optionalGroup(multi, TABLES.attribution);
    if (!g) return {};
    const a = attrsOf(g);
    const table = (name: string) => this.optionalGroup(g, name);
    const groups = table('groups');
    const consumers = table('consumers') ? this.strings(table('consumers')!, 'id') : [];
    const names = groups ? this.strings(groups, 'group') : [];
    const col = (name: string) => (groups ? this.numbers(groups, name) : []);
    const energy = table('consumer_energy');
    const cellConsumer = energy ? this.numbers(energy, 'consumer') : [];
    const cellGroup = energy ? this.strings(energy, 'group') : [];
    const cellEnergy = energy ? this.numbers(energy, 'energy') : [];
    const methods = groups ? this.strings(groups, 'method') : [];
    const [measured, app, others, unattributed, idle, missing, missingS] = [
      'measured',
      'app',
      'others',
      'unattributed',
      'idle',
      'missing_intervals',
      'missing_seconds',
    ].map(col);
    return {
      attribution: {
        idleShare: text(a, 'idle_share', g.path) as IdlePolicy,
        appIs: text(a, 'app', g.path),
        consumerIds: consumers,
        groups: names.map((group, i) => ({
          group: group as AttributedGroup,
          method: methods[i] as EnergyMethod,
          measured: measured![i]!,
          app: app![i]!,
          consumers: consumers.map(
            (_id, k) =>
              cellEnergy[cellGroup.findIndex((cg, j) => cg === group && cellConsumer[j] === k)] ?? Number.NaN,
          ),
          others: others![i]!,
          unattributed: unattributed![i]!,
          idle: idle![i]!,
          missingIntervals: missing![i]!,
          missingSeconds: missingS![i]!,
        })),
        notes: table('notes') ? this.strings(table('notes')!, 'text') : [],
      },
    };
  }

  /** The sensors of a host, in the report's series order. */
  series(host: Group): SeriesSpec[] {
    const placed = this.children(this.group(host, 'nodes')).flatMap((dg) =>
      this.children(this.group(dg, 'nodes')).map((sensor) => {
        const a = attrsOf(sensor);
        const field = (name: string) => text(a, name, sensor.path);
        const direction = optionalText(a, SENSOR_ATTRS.direction, sensor.path) as SeriesSpec['direction'];
        const outside = num(a, SENSOR_ATTRS.outsidePlatform, sensor.path) === 1;
        const spec: SeriesSpec = {
          id: idOf(sensor),
          signal: field(SENSOR_ATTRS.signal),
          domain: field(SENSOR_ATTRS.domain),
          index: requiredNum(a, SENSOR_ATTRS.index, sensor.path),
          group: idOf(dg) as DeviceGroup,
          kind: field(SENSOR_ATTRS.kind) as SeriesKind,
          backend: field(SENSOR_ATTRS.backend),
          ...(direction ? { direction } : {}),
          ...(outside ? { outsidePlatform: true as const } : {}),
        };
        return { position: requiredNum(a, SENSOR_ATTRS.position, sensor.path), spec };
      }),
    );
    return placed.sort((a, b) => a.position - b.position).map((p) => p.spec);
  }

  sensorData(host: Group, s: SeriesSpec): Group {
    const dg = this.group(this.group(host, 'nodes'), s.group);
    return this.group(this.group(this.group(dg, 'nodes'), nodeName(s.id)), 'raw_data');
  }

  /** How each group's energy is measured, in the order its group first appears in the series. */
  sources(host: Group, series: readonly SeriesSpec[]): SourceInfo[] {
    const devices = this.group(host, 'nodes');
    return [...new Set(series.map((s) => s.group))].flatMap((group) => {
      const dg = this.optionalGroup(devices, group);
      const a = dg ? attrsOf(dg) : {};
      if (!dg || a[SOURCE_ATTRS.detail] === undefined) return [];
      const seriesIds = a[SOURCE_ATTRS.series];
      if (!Array.isArray(seriesIds)) throw new TreeError(`${dg.path}: ${SOURCE_ATTRS.series} is not a list`);
      const wattsPerUnit = num(a, SOURCE_ATTRS.wattsPerUnit, dg.path);
      return [
        {
          group,
          method: text(a, SOURCE_ATTRS.method, dg.path) as EnergyMethod,
          series: seriesIds.map(String),
          detail: text(a, SOURCE_ATTRS.detail, dg.path),
          ...(wattsPerUnit === undefined ? {} : { wattsPerUnit }),
        },
      ];
    });
  }

  diagnostics(multi: Group): Diagnostic[] {
    const table = this.optionalGroup(multi, TABLES.unavailable);
    if (!table) return [];
    const backend = this.strings(table, 'backend');
    const signal = this.strings(table, 'signal');
    const reason = this.strings(table, 'reason');
    return backend.map((b, i) => ({ backend: b, signal: signal[i] || undefined, reason: reason[i]! }));
  }

  round(run: Group, series: readonly SeriesSpec[]): RoundReport {
    const a = attrsOf(run);
    const host = this.firstChild(this.group(run, 'nodes'));
    const data = series.map((s) => this.sensorData(host, s));
    const exit: AppExit = {
      status: requiredNum(a, RUN_ATTRS.exitStatus, run.path),
      code: requiredNum(a, RUN_ATTRS.exitCode, run.path),
      signal: text(a, RUN_ATTRS.exitSignal, run.path),
    };
    const problems = this.optionalGroup(run, TABLES.problems);
    const total = hostTotalOf(a, run.path);
    // Energy and what follows from it are no metric when nothing was measured (hdf5.ts).
    const measured = (node: Group, metric: string) => this.metric(node, metric) ?? Number.NaN;
    const metrics: HostMetrics = {
      runtime: this.requiredMetric(run, 'runtime'),
      energy: measured(host, 'energy'),
      power: measured(run, 'power'),
      estimatedEnergy: num(a, RUN_ATTRS.estimatedEnergy, run.path) ?? Number.NaN,
      estimatedPower: num(a, RUN_ATTRS.estimatedPower, run.path) ?? Number.NaN,
      facilityEnergy: measured(run, 'energy'),
      co2: measured(run, 'co2'),
      money: measured(run, 'money'),
      groups: this.groups(host),
      ...(total ? { total } : {}),
    };
    return {
      id: idOf(run),
      exit,
      overruns: requiredNum(a, RUN_ATTRS.overruns, run.path),
      times: data[0] ? this.numbers(data[0], 'timesteps') : [],
      values: data.map((d) => this.numbers(d, 'values')),
      events: this.events(run),
      metrics: {
        host: metrics,
        regions: this.calls(run),
        problems: problems ? this.strings(problems, 'text') : [],
      },
    };
  }

  /** Each device group's metrics; a group holding nothing but sensors has none. */
  groups(host: Group): Partial<Record<DeviceGroup, GroupMetrics>> {
    const out: Partial<Record<DeviceGroup, GroupMetrics>> = {};
    for (const dg of this.children(this.group(host, 'nodes'))) {
      const group = idOf(dg) as DeviceGroup;
      const a = attrsOf(dg);
      const method = optionalText(a, SOURCE_ATTRS.method, dg.path) as EnergyMethod | undefined;
      const value = (key: (typeof GROUP_VALUE_KEYS)[number]) => {
        const place = groupValuePlace(group, key, method);
        const metric = place.metric === undefined ? undefined : this.metric(dg, place.metric);
        return metric ?? num(a, place.attribute, dg.path);
      };
      const gm: GroupMetrics = {
        energy: value('energy') ?? Number.NaN,
        power: value('power') ?? Number.NaN,
        method,
        coverage: num(a, SOURCE_ATTRS.coverage, dg.path),
        util: value('util'),
        memory: value('memory'),
        readBytes: value('readBytes'),
        writeBytes: value('writeBytes'),
      };
      const measured = [gm.method, gm.util, gm.memory, gm.readBytes, gm.writeBytes].some(
        (v) => v !== undefined,
      );
      if (measured || !Number.isNaN(gm.energy) || !Number.isNaN(gm.power)) out[group] = gm;
    }
    return out;
  }

  events(run: Group): RegionEvent[] {
    const table = this.optionalGroup(run, TABLES.events);
    if (!table) return [];
    const name = this.strings(table, 'name');
    const kind = this.strings(table, 'kind');
    const t = this.numbers(table, 't');
    const call = table.get('call') === null ? [] : this.strings(table, 'call');
    return name.map((n, i) => ({
      name: n,
      kind: kind[i] as RegionEvent['kind'],
      t: t[i]!,
      ...(call[i] ? { call: call[i] } : {}),
    }));
  }

  /**
   * Region calls: the region_calls table in call order, each call's start and stop the next
   * pair of perun's `regions/<name>/raw_data/0`.
   */
  calls(run: Group): RegionCallMetrics[] {
    const table = this.optionalGroup(run, TABLES.calls);
    if (!table) return [];
    const times = new Map<string, number[]>();
    for (const region of this.children(this.group(run, 'regions')))
      times.set(idOf(region), this.numbers(this.group(region, 'raw_data'), '0'));
    const used = new Map<string, number>();
    const column = (name: string) => this.numbers(table, name);
    const optionalColumn = (name: string) => (table.get(name) === null ? undefined : column(name));
    const [depth, open, energy, power, estimated] = [
      'depth',
      'open',
      'energy',
      'power',
      'estimated_energy',
    ].map(column) as [number[], number[], number[], number[], number[]];
    const cpuUtil = optionalColumn('cpu_util');
    const gpuUtil = optionalColumn('gpu_util');
    const groupEnergy = table
      .keys()
      .filter((k) => k.startsWith(GROUP_ENERGY_COLUMN))
      .map((k) => [k.slice(GROUP_ENERGY_COLUMN.length) as DeviceGroup, column(k)] as const);
    return this.strings(table, 'name').map((name, i) => {
      const k = used.get(name) ?? 0;
      used.set(name, k + 1);
      const [start, stop] = [times.get(name)?.[2 * k], times.get(name)?.[2 * k + 1]];
      if (start === undefined || stop === undefined)
        throw new TreeError(`${run.path}/regions: no start and stop for call ${k + 1} of ${name}`);
      return {
        name,
        start,
        stop,
        depth: depth[i]!,
        open: open[i] !== 0,
        runtime: stop - start,
        energy: energy[i]!,
        power: power[i]!,
        estimatedEnergy: estimated[i]!,
        groupEnergy: Object.fromEntries(groupEnergy.map(([g, values]) => [g, values[i]!])),
        cpuUtil: cpuUtil?.[i],
        gpuUtil: gpuUtil?.[i],
      };
    });
  }
}

/** The host total rule's decision stored on a RUN; undefined in reports written before it. */
function hostTotalOf(a: Attrs, where: string): HostTotal | undefined {
  const rule = optionalText(a, HOST_TOTAL_ATTRS.rule, where);
  if (rule === undefined) return undefined;
  const groups = (name: string) => {
    const list = text(a, name, where);
    return (list === '' ? [] : list.split(',')) as DeviceGroup[];
  };
  return {
    rule: rule as HostRule,
    boardEnergy: requiredNum(a, HOST_TOTAL_ATTRS.boardEnergy, where),
    coveredGroups: groups(HOST_TOTAL_ATTRS.coveredGroups),
    coveredEnergy: requiredNum(a, HOST_TOTAL_ATTRS.coveredEnergy, where),
    outsideGroups: groups(HOST_TOTAL_ATTRS.outsideGroups),
    outsideEnergy: requiredNum(a, HOST_TOTAL_ATTRS.outsideEnergy, where),
  };
}

/** The HDF5 format signature, at 0 or after a user block of 512, 1024, 2048, … bytes. */
const SIGNATURE = Buffer.from([0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Refuses a file that is not HDF5 before the library sees it: HDF5 would print its error
 * stack for it and hand back an unusable file.
 */
function checkSignature(path: string): void {
  const head = Buffer.alloc(1 << 16);
  let length: number;
  try {
    const fd = openSync(path, 'r');
    try {
      length = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw new JoulegateError(`cannot read ${shortValue(path)}: ${errorMessage(err)}`);
  }
  for (let at = 0; at + SIGNATURE.length <= length; at = at === 0 ? 512 : at * 2)
    if (head.subarray(at, at + SIGNATURE.length).equals(SIGNATURE)) return;
  throw new ParseError(`${shortValue(path)}: not an HDF5 file`);
}

/**
 * One line from an error HDF5 raised: the innermost entry of its error stack ("truncated file:
 * eof = 5000, …") rather than the whole stack the library would print.
 */
function hdf5Reason(err: unknown): string {
  const message = errorMessage(err);
  const entries = [...message.matchAll(/#\d+: .* in [\w.]+\(\): (.*)$/gm)];
  return entries.at(-1)?.[1]?.trim() ?? message.split('\n')[0]!;
}

/**
 * Reads a report written by writeHdf5 (`runId`, by default its latest run: a file written with
 * `hdf5_file = app` holds several) from its tree, or one run of a file perun wrote
 * (hdf5-perun-read.ts).
 */
export async function readHdf5(path: string, runId?: string): Promise<Report> {
  return withTree(path, async (reader, file, fromPerun) => {
    if (fromPerun) return (await import('./hdf5-perun-read.js')).readPerunTree(reader, file, runId);
    return reader.report(file, runId);
  });
}

/**
 * Every run of an HDF5 file joulegate wrote (its accumulating `<app>.hdf5`), in the file's
 * order; undefined for a file perun wrote (joulegate does not rewrite those).
 */
export async function readHdf5Runs(path: string): Promise<Report[] | undefined> {
  return withTree(path, async (reader, file, fromPerun) => (fromPerun ? undefined : reader.reports(file)));
}

/** Opens `path` and hands its tree to `use`; every failure is one line naming the file. */
async function withTree<T>(
  path: string,
  use: (reader: JoulegateTreeReader, file: Group, fromPerun: boolean) => Promise<T>,
): Promise<T> {
  checkSignature(path);
  const h5 = await loadH5();
  // HDF5 prints its error stack to stderr (40 lines for a truncated file); thrown instead, it
  // becomes one line here. Only while reading: a read has nothing to leave half done.
  h5.Module.activate_throwing_error_handler();
  try {
    let file: InstanceType<H5['File']>;
    try {
      file = new h5.File(path, 'r');
    } catch (err) {
      throw new ParseError(`${shortValue(path)}: not a readable HDF5 file (${hdf5Reason(err)})`);
    }
    const reader = new JoulegateTreeReader(h5);
    const perun = await import('./hdf5-perun-read.js');
    let fromPerun = false;
    try {
      fromPerun = perun.isPerunTree(reader, file);
      return await use(reader, file, fromPerun);
    } catch (err) {
      if (err instanceof TreeError)
        throw new ParseError(
          `${shortValue(path)}: not a ${fromPerun ? 'perun' : 'joulegate'} HDF5 report: ${err.message}`,
        );
      if (err instanceof JoulegateError) throw err;
      throw new ParseError(`${shortValue(path)}: damaged HDF5 report (${hdf5Reason(err)})`);
    } finally {
      try {
        file.close();
      } catch {
        // a file that failed to read may fail to close as well; the read error is the news
      }
    }
  } finally {
    h5.Module.deactivate_throwing_error_handler();
  }
}
