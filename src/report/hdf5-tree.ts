import type { Stat } from '../monitor/model/report-model.js';
import {
  type Dataset,
  type Group,
  type H5,
  metricGroupName,
  type Node,
  ONE_VALUE_ATTR,
} from './hdf5-layout.js';

/*
 * Walking an HDF5 tree that perun's layout shapes: groups, datasets, attributes and perun's
 * metrics, each a one-line TreeError when missing or of the wrong kind. Both readers (ours in
 * hdf5-read.ts, perun's in hdf5-perun-read.ts) stand on it.
 */

/** A bad or missing part of the tree: reported as one line naming the file and the place. */
export class TreeError extends Error {}

export type Attrs = Record<string, unknown>;

/** Navigation of the tree, for the readers of a report layout. */
export class TreeReader {
  constructor(protected readonly h5: H5) {}

  group(parent: Group, name: string): Group {
    const g = parent.get(name);
    if (!(g instanceof this.h5.Group)) throw new TreeError(`no group ${parent.path}/${name}`);
    return g;
  }

  dataset(parent: Group, name: string): Dataset {
    const d = parent.get(name);
    if (!(d instanceof this.h5.Dataset)) throw new TreeError(`no dataset ${parent.path}/${name}`);
    return d;
  }

  /** The group's only child (the first when there are several: perun keeps history). */
  firstChild(parent: Group): Group {
    const name = parent.keys()[0];
    if (name === undefined) throw new TreeError(`${parent.path} is empty`);
    return this.group(parent, name);
  }

  children(parent: Group): Group[] {
    return parent.keys().map((k) => this.group(parent, k));
  }

  optionalGroup(parent: Group, name: string): Group | undefined {
    return parent.get(name) === null ? undefined : this.group(parent, name);
  }

  numbers(parent: Group, name: string): number[] {
    const value = this.dataset(parent, name).value;
    if (!ArrayBuffer.isView(value)) throw new TreeError(`${parent.path}/${name} is not numeric`);
    return Array.from(value as ArrayLike<number | bigint>, Number);
  }

  strings(parent: Group, name: string): string[] {
    const value = this.dataset(parent, name).value;
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
      throw new TreeError(`${parent.path}/${name} is not text`);
    return value;
  }

  /** The value of a perun Metric (`metrics/<NAME>` attribute `value`); undefined when absent. */
  metric(node: Group, metric: string): number | undefined {
    const m = this.optionalGroup(this.group(node, 'metrics'), metricGroupName(metric));
    return m && num(attrsOf(m), 'value', m.path);
  }

  requiredMetric(node: Group, metric: string): number {
    const v = this.metric(node, metric);
    if (v === undefined) throw new TreeError(`no ${metricGroupName(metric)} metric in ${node.path}`);
    return v;
  }

  /** A perun Stats metric; undefined when absent. */
  optionalStats(node: Group, metric: string): Stat | undefined {
    const m = this.optionalGroup(this.group(node, 'metrics'), metricGroupName(metric));
    if (!m) return undefined;
    const a = attrsOf(m);
    const of = (k: string) => requiredNum(a, k, m.path);
    // Over one value the file says 0.0 as perun does; joulegate's report has no spread there.
    const std = a[ONE_VALUE_ATTR] !== undefined ? Number.NaN : of('std');
    return { mean: of('mean'), std, min: of('min'), max: of('max'), sum: of('sum') };
  }
}

/** Attribute values in creation order. */
export function attrsOf(node: Node): Attrs {
  return Object.fromEntries(Object.entries(node.attrs).map(([k, a]) => [k, a.value]));
}

/** A node's id: its name, or the `id` attribute where the name had to change. */
export function idOf(node: Group): string {
  const id = attrsOf(node).id;
  return typeof id === 'string' ? id : node.path.slice(node.path.lastIndexOf('/') + 1);
}

export function optionalText(a: Attrs, name: string, where: string): string | undefined {
  const v = a[name];
  if (v !== undefined && typeof v !== 'string')
    throw new TreeError(`${where}: attribute ${name} is not text`);
  return v;
}

export function text(a: Attrs, name: string, where: string): string {
  const v = optionalText(a, name, where);
  if (v === undefined) throw new TreeError(`${where}: no attribute ${name}`);
  return v;
}

export function num(a: Attrs, name: string, where: string): number | undefined {
  const v = a[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' && typeof v !== 'bigint')
    throw new TreeError(`${where}: attribute ${name} is not a number`);
  return Number(v);
}

export function requiredNum(a: Attrs, name: string, where: string): number {
  const v = num(a, name, where);
  if (v === undefined) throw new TreeError(`${where}: no attribute ${name}`);
  return v;
}

/** The text attributes that are not joulegate's own (metadata on a RUN, config on a MULTI_RUN). */
export function textAttrsExcept(a: Attrs, own: readonly string[]): Record<string, string> {
  const skip = new Set([...own, 'type', 'id']);
  return Object.fromEntries(
    Object.entries(a).filter((e): e is [string, string] => !skip.has(e[0]) && typeof e[1] === 'string'),
  );
}
