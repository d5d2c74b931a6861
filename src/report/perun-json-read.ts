import type { Report } from '../monitor/model/report-model.js';
import { JoulegateError, ParseError, shortValue } from '../platform/errors.js';
import { type Group, type H5, metricGroupName } from './hdf5-layout.js';
import { isPerunTree, readPerunTree } from './hdf5-perun-read.js';
import { TreeError, TreeReader } from './hdf5-tree.js';

/*
 * perun's JSON export (`perun monitor -f json`, `perun export FILE json`; perun/io/json.py,
 * DataNode.toDict, docs/reference/perun-files.md#json-export): the same APP tree as its HDF5 file,
 * as nested objects. It is laid out here as perun's HDF5 writer lays out the same tree (groups
 * named by id, `metrics/<MEMBER>`, `nodes/`, `raw_data/`, `regions/`), in memory, and read by
 * the one reader of perun's trees (hdf5-perun-read.ts): both files of one run give one report.
 */

type Json = Record<string, unknown>;

/** An attribute as h5wasm shows it: `{ value }`. */
type Attr = { value: unknown };

/** A group of the tree built from the JSON, with the parts of h5wasm's Group the readers use. */
class JsonGroup {
  readonly attrs: Record<string, Attr> = {};
  private readonly members = new Map<string, JsonGroup | JsonDataset>();

  constructor(readonly path: string) {}

  keys(): string[] {
    return [...this.members.keys()];
  }

  get(name: string): JsonGroup | JsonDataset | null {
    return this.members.get(name) ?? null;
  }

  group(name: string): JsonGroup {
    const existing = this.members.get(name);
    if (existing instanceof JsonGroup) return existing;
    const g = new JsonGroup(`${this.path === '/' ? '' : this.path}/${name}`);
    this.members.set(name, g);
    return g;
  }

  dataset(name: string, value: Float64Array): JsonDataset {
    const d = new JsonDataset(`${this.path}/${name}`, value);
    this.members.set(name, d);
    return d;
  }

  set(name: string, value: unknown): void {
    this.attrs[name] = { value };
  }
}

class JsonDataset {
  readonly attrs: Record<string, Attr> = {};

  constructor(
    readonly path: string,
    readonly value: Float64Array,
  ) {}
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A number of the file (null is Python's NaN, see parsePythonJson); anything else is missing. */
function numberOf(v: unknown): number | undefined {
  if (v === null) return Number.NaN;
  return typeof v === 'number' ? v : undefined;
}

/** perun's MetricMetaData → the attributes its HDF5 writer gives a metric or dataset. */
function describe(target: JsonGroup | JsonDataset, md: unknown, where: string): void {
  if (!isObject(md)) throw new TreeError(`${where}: no metric_md`);
  target.attrs.unit = { value: md.unit };
  target.attrs.mag = { value: numberOf(md.mag) };
  target.attrs.dtype = { value: md.dtype };
  for (const [from, to] of [
    ['min', 'valid_min'],
    ['max', 'valid_max'],
    ['fill', 'fill'],
  ] as const) {
    const v = numberOf(md[from]);
    if (v !== undefined) target.attrs[to] = { value: v };
  }
}

/** A Metric (`value`, `agg`) or Stats (`sum`, `mean`, `std`, `min`, `max`) as a metric group. */
function addMetric(metrics: JsonGroup, m: unknown, where: string): void {
  if (!isObject(m) || typeof m.type !== 'string') throw new TreeError(`${where}: a metric without a type`);
  const g = metrics.group(metricGroupName(m.type));
  describe(g, m.metric_md, `${where}/${m.type}`);
  g.set('type', m.type);
  if ('value' in m) {
    g.set('agg_type', m.agg);
    g.set('value', numberOf(m.value));
  } else {
    for (const k of ['sum', 'mean', 'std', 'min', 'max']) g.set(k, numberOf(m[k]));
  }
}

function numbers(v: unknown, where: string): Float64Array {
  if (!Array.isArray(v)) throw new TreeError(`${where} is not a list of numbers`);
  return Float64Array.from(v, (x) => {
    const n = numberOf(x);
    if (n === undefined) throw new TreeError(`${where} is not a list of numbers`);
    return n;
  });
}

/** `nodes` as toDict writes it: a dict inside a one-element list (a dict alone is taken too). */
function childrenOf(node: Json, where: string): Json {
  const nodes = Array.isArray(node.nodes) && node.nodes.length === 1 ? node.nodes[0] : node.nodes;
  if (nodes === undefined || nodes === null) return {};
  if (!isObject(nodes)) throw new TreeError(`${where}: "nodes" is not perun's dict of nodes`);
  return nodes;
}

/** One DataNode dict under `parent`, as perun's HDF5 writer lays it out. */
function addNode(parent: JsonGroup, node: unknown, key: string): void {
  const where = `${parent.path}/${key}`;
  if (!isObject(node)) throw new TreeError(`${where} is not a perun node`);
  const id = typeof node.id === 'string' ? node.id : key;
  const g = parent.group(id);
  g.set('type', numberOf(node.type));
  if (isObject(node.metadata))
    for (const [k, v] of Object.entries(node.metadata))
      g.set(k, typeof v === 'string' ? v : v === null ? 'None' : JSON.stringify(v));
  if (typeof node.deviceType === 'string') g.set('device_type', node.deviceType);
  const metrics = g.group('metrics');
  if (isObject(node.metrics)) for (const m of Object.values(node.metrics)) addMetric(metrics, m, where);
  const nodes = g.group('nodes');
  for (const [k, child] of Object.entries(childrenOf(node, where))) addNode(nodes, child, k);
  if (isObject(node.raw_data)) {
    const raw = g.group('raw_data');
    const r = node.raw_data;
    for (const [name, md] of [
      ['timesteps', 't_md'],
      ['values', 'v_md'],
      ['alt_values', 'alt_v_md'],
    ] as const) {
      if (r[name] === undefined || r[name] === null) continue;
      describe(raw.dataset(name, numbers(r[name], `${where}/raw_data/${name}`)), r[md], where);
    }
  }
  if (isObject(node.regions)) {
    const regions = g.group('regions');
    for (const [name, region] of Object.entries(node.regions)) {
      if (!isObject(region)) throw new TreeError(`${where}/regions/${name} is not a perun region`);
      const rg = regions.group(name);
      rg.set('id', typeof region.id === 'string' ? region.id : name);
      const rm = rg.group('metrics');
      if (Array.isArray(region.metrics))
        for (const m of region.metrics) addMetric(rm, m, `${where}/regions/${name}`);
      if (isObject(region.runs_per_rank)) addMetric(rg, region.runs_per_rank, `${where}/regions/${name}`);
      const raw = rg.group('raw_data');
      if (isObject(region.raw_data))
        for (const [rank, times] of Object.entries(region.raw_data))
          raw.dataset(rank, numbers(times, `${where}/regions/${name}/raw_data/${rank}`));
    }
  }
}

/**
 * JSON as Python's json module writes it: NaN, Infinity and -Infinity are bare words there (not
 * JSON). Outside strings they become null (NaN) and ±1e999 (which JSON.parse reads as ±Infinity).
 */
export function parsePythonJson(text: string): unknown {
  const fixed = text.replace(
    /"(?:[^"\\]|\\.)*"|(-?)\b(NaN|Infinity)\b/g,
    (m, sign: string, word?: string) => {
      if (word === undefined) return m;
      return word === 'NaN' ? 'null' : `${sign}1e999`;
    },
  );
  return JSON.parse(fixed);
}

/** Whether JSON text looks like perun's export (a DataNode dict: it starts with its "id"). */
export const looksLikePerunJson = (text: string) => /^\s*\{\s*"id"\s*:/.test(text);

/** One run (MULTI_RUN; `runId`, by default the latest) of perun's JSON export as a report. */
export function readPerunJson(text: string, origin: string, runId?: string): Report {
  let data: unknown;
  try {
    data = parsePythonJson(text);
  } catch (err) {
    throw new ParseError(`${shortValue(origin)}: not valid JSON (${(err as Error).message})`);
  }
  const root = new JsonGroup('/');
  const h5 = { Group: JsonGroup, Dataset: JsonDataset } as unknown as H5;
  const reader = new TreeReader(h5);
  const file = root as unknown as Group;
  try {
    addNode(root, data, 'app');
    if (!isPerunTree(reader, file))
      throw new TreeError('expected an APP node (type 1) holding MULTI_RUN nodes (type 2)');
    return readPerunTree(reader, file, runId);
  } catch (err) {
    if (err instanceof TreeError)
      throw new ParseError(`${shortValue(origin)}: not a perun JSON export: ${err.message}`);
    if (err instanceof JoulegateError) throw err;
    throw new ParseError(`${shortValue(origin)}: damaged perun JSON export (${(err as Error).message})`);
  }
}
