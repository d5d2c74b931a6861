import type { LibraryHandle } from 'koffi';
import { ErrorCode, errorMessage, JoulegateError, PermissionError } from '../platform/errors.js';
import { loadKoffi } from '../platform/ffi.js';
import type { Sysroot } from '../platform/sysroot.js';
import { BackendUnavailableError } from './registry.js';

/** How to find one vendor library: its soname and the env var that overrides the path. */
export interface VendorLibrarySpec {
  soname: string;
  envVar: string;
  /** Why the library is usually missing, shown in listings (e.g. "no NVIDIA driver?"). */
  hint: string;
  /** The vendor's kernel driver, as named in messages ("NVIDIA", "amdgpu"). */
  driver: string;
  /** Paths that exist when that driver is loaded (any one is enough). */
  driverPaths: string[];
}

/**
 * Throws BackendUnavailableError unless the vendor's kernel driver shows itself under the
 * sysroot, or the library path is overridden (tests, unusual installs). Without the driver the
 * library cannot find a GPU anyway; checking a few paths first spares the many nodes without
 * that vendor's GPUs loading koffi and searching the loader path for the library.
 */
export function requireVendorDriver(spec: VendorLibrarySpec, sysroot: Sysroot): void {
  const override = process.env[spec.envVar];
  if (override !== undefined && override !== '') return;
  if (spec.driverPaths.some((p) => sysroot.exists(p))) return;
  throw new BackendUnavailableError(
    `no ${spec.driver} driver loaded (none of ${spec.driverPaths.join(', ')} exists)`,
  );
}

/**
 * Opens a vendor library by soname (the dynamic loader's search path) or by the path in the
 * override env var. A missing library means "this backend is not on this node", never an error
 * of the whole program, so it is reported as BackendUnavailableError with the reason.
 */
export function openVendorLibrary(spec: VendorLibrarySpec): { lib: LibraryHandle; path: string } {
  const override = process.env[spec.envVar];
  const path = override !== undefined && override !== '' ? override : spec.soname;
  try {
    return { lib: loadKoffi().load(path), path };
  } catch (err) {
    const detail = errorMessage(err).split('\n')[0];
    const where = path === spec.soname ? spec.soname : `${path} (from ${spec.envVar})`;
    throw new BackendUnavailableError(`${where} not found (${spec.hint}): ${detail}`);
  }
}

/** The device does not implement this query or control (e.g. NVML_ERROR_NOT_SUPPORTED). */
export class GpuUnsupportedError extends JoulegateError {
  constructor(message: string) {
    super(message, ErrorCode.NotImplemented);
    this.name = 'GpuUnsupportedError';
  }
}

/** How a vendor library's status codes map onto joulegate's error kinds. */
export interface StatusCodes {
  success: number;
  notSupported: number;
  noPermission: number;
  /** The library's own text for a status, e.g. nvmlErrorString. */
  describe(status: number): string;
  /** Advice appended to permission errors. */
  permissionHint: string;
}

/** Throws the right error kind for a failed library call; returns quietly on success. */
export function checkStatus(codes: StatusCodes, fn: string, status: number): void {
  if (status === codes.success) return;
  const text = `${fn}: ${codes.describe(status)} (status ${status})`;
  if (status === codes.notSupported) throw new GpuUnsupportedError(text);
  if (status === codes.noPermission) throw new PermissionError(`${text}; ${codes.permissionHint}`);
  throw new JoulegateError(text);
}

/** The library loaded here lacks a C function that a signal, control or query needs. */
export class MissingLibraryFunctionError extends JoulegateError {
  constructor(library: string, functions: readonly string[]) {
    super(`${library} lacks ${functions.join(' and ')}`, ErrorCode.NotImplemented);
    this.name = 'MissingLibraryFunctionError';
  }
}

/** C functions by name, each with its parameter types; all of one table return the same type. */
export type CSignatures<Name extends string = string> = Readonly<Record<Name, readonly unknown[]>>;

/** A table of C signatures, typed by its names only (koffi's type objects stay out of the types). */
export function cSignatures<Name extends string>(table: CSignatures<Name>): CSignatures<Name> {
  return table;
}

/**
 * Base of the per-library FFI classes: opens the library, binds its functions and turns status
 * codes into errors. Libraries differ by version: a function the backend cannot start without
 * is bound strictly (its absence makes the backend unavailable, with the reason), every other
 * one on its own, so that a library lacking it loses only what that function feeds.
 * Subclasses call their functions by C name through `call` / `invoke`.
 */
export abstract class VendorLibrary<Call extends string = string> {
  readonly path: string;
  /** The library as messages name it, e.g. `libnvidia-ml`. */
  readonly library: string;
  protected readonly lib: LibraryHandle;
  private readonly codes: StatusCodes;
  private readonly functions = new Map<string, ReturnType<LibraryHandle['func']>>();
  private readonly absent: string[] = [];

  constructor(spec: VendorLibrarySpec, codes: Omit<StatusCodes, 'describe'>) {
    const { lib, path } = openVendorLibrary(spec);
    this.lib = lib;
    this.path = path;
    this.library = spec.soname.replace(/\.so(\..*)?$/, '');
    this.codes = { ...codes, describe: (status) => this.describeStatus(status) };
  }

  /**
   * Binds every function of both tables (all returning `result`). One missing from `required`
   * makes the library unusable here: BackendUnavailableError naming it.
   */
  protected bindFunctions(result: unknown, required: CSignatures, optional: CSignatures): void {
    for (const [name, args] of Object.entries(required)) {
      if (!this.bindOne(name, result, args)) {
        throw new BackendUnavailableError(
          `${this.library} (${this.path}) lacks ${name}, which joulegate needs`,
        );
      }
    }
    for (const [name, args] of Object.entries(optional)) {
      if (!this.bindOne(name, result, args)) this.absent.push(name);
    }
  }

  /** Binds one function; false when the library does not export it. */
  private bindOne(name: string, result: unknown, args: readonly unknown[]): boolean {
    try {
      this.functions.set(name, this.lib.func(name, result as never, args as never));
      return true;
    } catch (err) {
      // koffi's words for a symbol the library does not export; anything else is a bad declaration.
      if (/^Cannot find function/.test(errorMessage(err))) return false;
      throw err;
    }
  }

  /** Optional functions this library lacks, by C name. */
  get lacking(): readonly string[] {
    return this.absent;
  }

  has(name: Call): boolean {
    return this.functions.has(name);
  }

  /** Throws MissingLibraryFunctionError when any of `names` is absent (for calls made later, e.g. writes). */
  requireFunctions(...names: Call[]): void {
    const missing = names.filter((n) => !this.has(n));
    if (missing.length > 0) throw new MissingLibraryFunctionError(this.library, missing);
  }

  /** The first of `names` the library has (newest first); MissingLibraryFunctionError naming all when none. */
  protected firstPresent(...names: Call[]): Call {
    const found = names.find((n) => this.has(n));
    if (found === undefined) throw new MissingLibraryFunctionError(this.library, names);
    return found;
  }

  /** Calls `name` and returns what it returns (a status, unless told); MissingLibraryFunctionError when absent. */
  protected invoke<Result = number>(name: Call, ...args: unknown[]): Result {
    const fn = this.functions.get(name);
    if (!fn) throw new MissingLibraryFunctionError(this.library, [name]);
    return fn(...args) as Result;
  }

  /** Calls `name` and throws the right error kind when its status is not success. */
  protected call(name: Call, ...args: unknown[]): void {
    this.check(name, this.invoke(name, ...args));
  }

  /** The library's own text for a status (nvmlErrorString, amdsmi_status_code_to_string). */
  protected abstract describeStatus(status: number): string;

  /** Initialises the library in this process (nvmlInit_v2, amdsmi_init); reference-counted. */
  abstract init(): void;

  /** Drops this process's reference (nvmlShutdown, amdsmi_shut_down). */
  abstract shutDown(): void;

  protected check(fn: string, status: number): void {
    checkStatus(this.codes, fn, status);
  }
}

/** 64-bit values come back from koffi as number or bigint depending on size. */
export function toNumber(value: number | bigint): number {
  return typeof value === 'bigint' ? Number(value) : value;
}

/** Decodes a NUL-terminated C string held in a buffer. */
export function cString(buf: Buffer): string {
  const end = buf.indexOf(0);
  return buf.toString('utf8', 0, end < 0 ? buf.length : end);
}

/** Decodes a CPU bit mask made of 64-bit little-endian words into a sorted CPU list. */
export function cpusFromMask(words: Buffer): number[] {
  const cpus: number[] = [];
  for (let w = 0; w < words.length / 8; w++) {
    const word = words.readBigUInt64LE(w * 8);
    for (let bit = 0; bit < 64; bit++) if ((word >> BigInt(bit)) & 1n) cpus.push(w * 64 + bit);
  }
  return cpus;
}
