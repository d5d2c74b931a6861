import { JoulegateError, shortValue } from '../../platform/errors.js';

/*
 * The in-memory HDF5 tree that write-file.ts serialises: groups, 1-D datasets and attributes,
 * of the few types a report needs. Everything is checked here, where it is added,
 * so that a bad name or value fails at the line that made it.
 */

/**
 * An attribute's value: a scalar, or a 1-D array of strings. Strings are variable-length UTF-8
 * (h5py reads them as str).
 */
export type AttrValue =
  | string
  | readonly string[]
  | { type: 'float64'; value: number }
  | { type: 'int64'; value: bigint };

/** A 1-D dataset's elements: their array type is their HDF5 type (strings: variable-length UTF-8). */
export type DatasetData = Float64Array | BigInt64Array | Int32Array | readonly string[];

export const isText = (value: AttrValue): value is string | readonly string[] =>
  typeof value === 'string' || Array.isArray(value);

export const isStrings = (data: DatasetData): data is readonly string[] => Array.isArray(data);

/** An attribute's creation index is 2 bytes. */
const MAX_ATTRIBUTES = 0xffff;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export const float64 = (value: number): AttrValue => ({ type: 'float64', value });

/** An int64 from a bigint, or from a number only when that number is an exact integer. */
export function int64(value: number | bigint): AttrValue {
  if (typeof value === 'number' && !Number.isSafeInteger(value))
    throw new JoulegateError(`HDF5 int64 attribute: ${value} is not an integer a number holds exactly`);
  const big = BigInt(value);
  if (big < INT64_MIN || big > INT64_MAX)
    throw new JoulegateError(`HDF5 int64 attribute: ${value} is out of range`);
  return { type: 'int64', value: big };
}

/** HDF5 names a member by its link: no '/', not empty, not '.' (libhdf5 refuses those). */
function checkName(name: string, what: string, where: string): void {
  if (name === '' || name === '.' || name.includes('/') || name.includes('\0'))
    throw new JoulegateError(
      `HDF5 ${what} name "${shortValue(name)}" under ${shortValue(where)} is not a valid name`,
    );
}

abstract class H5Object {
  readonly attributes = new Map<string, AttrValue>();
  constructor(readonly path: string) {}

  setAttr(name: string, value: AttrValue): void {
    checkName(name, 'attribute', this.path);
    if (this.attributes.has(name))
      throw new JoulegateError(`HDF5 attribute ${shortValue(name)} of ${shortValue(this.path)} is set twice`);
    if (this.attributes.size === MAX_ATTRIBUTES)
      throw new JoulegateError(`HDF5 object ${shortValue(this.path)}: over ${MAX_ATTRIBUTES} attributes`);
    this.attributes.set(name, value);
  }
}

export class H5Dataset extends H5Object {
  constructor(
    path: string,
    readonly data: DatasetData,
  ) {
    super(path);
  }
}

/**
 * A group. With `trackOrder`, readers list its members and attributes in the order they were
 * added (h5py's track_order); without, by name.
 */
export class H5Group extends H5Object {
  readonly members = new Map<string, H5Group | H5Dataset>();
  constructor(
    path: string,
    readonly trackOrder: boolean,
  ) {
    super(path);
  }

  group(name: string, trackOrder = false): H5Group {
    return this.add(name, (path) => new H5Group(path, trackOrder));
  }

  dataset(name: string, data: DatasetData): H5Dataset {
    return this.add(name, (path) => new H5Dataset(path, data));
  }

  get(name: string): H5Group | H5Dataset | undefined {
    return this.members.get(name);
  }

  private add<T extends H5Group | H5Dataset>(name: string, make: (path: string) => T): T {
    checkName(name, 'member', this.path);
    if (this.members.has(name))
      throw new JoulegateError(`HDF5 member ${shortValue(name)} of ${shortValue(this.path)} is added twice`);
    const member = make(this.path === '/' ? `/${name}` : `${this.path}/${name}`);
    this.members.set(name, member);
    return member;
  }
}

export type H5Node = H5Group | H5Dataset;

/** The root group of a new file: members and attributes in creation order, as h5py's track_order. */
export const rootGroup = () => new H5Group('/', true);
