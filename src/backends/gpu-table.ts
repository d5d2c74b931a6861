import type { Aggregation } from '../platform/aggregation.js';
import type { BackendContext } from '../platform/backend.js';
import { DomainType } from '../platform/domains.js';
import { errorMessage } from '../platform/errors.js';
import { FormatType } from '../platform/format.js';
import type { Behavior, SignalSpec, Units } from '../platform/signal-info.js';
import { type ControlDef, type SignalDef, TableBackend } from '../platform/table-backend.js';
import { BackendUnavailableError } from './registry.js';
import { GpuUnsupportedError, MissingLibraryFunctionError, type VendorLibrary } from './vendor-library.js';

/**
 * One row of a GPU backend's signal table: a per-device library query and the factor from the
 * library's unit to joulegate's SI unit (mW → W is 1e-3).
 */
export interface GpuQuery<D> extends SignalSpec {
  /** Low-level name without the backend prefix, e.g. `GPU_POWER`. */
  name: string;
  aliases?: string[];
  /** The value in the library's unit; throws on failure (GpuUnsupportedError, PermissionError…). */
  query(dev: D): number;
  scale: number;
}

/** A row of the control table: readable like a query, and writable with an SI value. */
export interface GpuControl<D> extends GpuQuery<D> {
  /** Applies an SI value. Validates first, so a bad value never reaches the library. */
  write(dev: D, value: number): void;
  /** Library call showing whether the device supports the control (default: `query`). */
  probe?(dev: D): unknown;
}

/** One GPU as the vendor library enumerates it. */
export interface GpuDevice<D> {
  handle: D;
  /** CPUs close to this GPU (fills the topology's gpu domain). */
  cpus: number[];
  /** UUID, name, PCI bus id… for metadata(). */
  info: Record<string, unknown>;
}

interface OpenDevice<D> extends GpuDevice<D> {
  /** Index of the gpu domain this device got in the topology. */
  gpu: number;
  /** Low-level names this device does not support (absent there, not an error). */
  unsupported: string[];
}

/** Values of one batch: per "name:gpu", the SI value or the error the library gave. */
export type GpuSnapshot = Map<string, number | Error>;

/** Shorthand for table rows: every vendor GPU signal lives on the gpu domain. */
export function gpuRow<D>(
  name: string,
  alias: string | undefined,
  description: string,
  units: Units,
  behavior: Behavior,
  aggregation: Aggregation,
  scale: number,
  query: (dev: D) => number,
): GpuQuery<D> {
  return {
    name,
    ...(alias ? { aliases: [alias] } : {}),
    description,
    domain: DomainType.Gpu,
    aggregation,
    format: FormatType.Double,
    behavior,
    units,
    scale,
    query,
  };
}

const key = (name: string, gpu: number) => `${name}:${gpu}`;

/**
 * Generic machinery for GPU backends over a vendor library: enumerates devices, adds each as a
 * gpu domain with its CPU affinity, probes every table row per device once at setup (a row the
 * device does not support is absent there), reads each requested (row, gpu) once per batch,
 * and routes control writes to the device. A vendor backend supplies its tables and device
 * enumeration only.
 */
export abstract class GpuTableBackend<D, L extends VendorLibrary> extends TableBackend<GpuSnapshot> {
  protected readonly lib: L;
  protected devices: OpenDevice<D>[] = [];
  private rows = new Map<string, GpuQuery<D>>();
  private byGpu = new Map<number, OpenDevice<D>>();

  constructor(lib: L) {
    super();
    this.lib = lib;
  }

  /** Lists the devices of the (already initialised) library. */
  protected abstract openDevices(ctx: BackendContext): GpuDevice<D>[] | Promise<GpuDevice<D>[]>;
  protected abstract signalTable(): GpuQuery<D>[];
  protected abstract controlTable(): GpuControl<D>[];

  protected async define(
    ctx: BackendContext,
  ): Promise<{ signals: SignalDef<GpuSnapshot>[]; controls: ControlDef<GpuSnapshot>[] }> {
    this.problems = [];
    // Every setup initialises the library in the calling process: vendor library state does not
    // survive fork(), and each init is one reference that close() gives back.
    this.lib.init();
    let found: GpuDevice<D>[];
    try {
      found = await this.openDevices(ctx);
      if (found.length === 0) throw new BackendUnavailableError(`${this.name}: the library reports no GPUs`);
    } catch (err) {
      this.lib.shutDown();
      throw err;
    }
    this.devices = found.map((d) => ({ ...d, gpu: ctx.topology.addGpu({ cpus: d.cpus }), unsupported: [] }));
    this.byGpu = new Map(this.devices.map((d) => [d.gpu, d]));
    const signals = this.signalTable()
      .map((row) => this.adapt(row, row.query.bind(row)))
      .filter((d) => d !== undefined);
    const controls = this.controlTable()
      .map((row) => this.adaptControl(row))
      .filter((d) => d !== undefined);
    return { signals, controls };
  }

  /** The device behind a gpu domain index (checked by TableBackend before any call). */
  protected deviceAt(gpu: number): D {
    const dev = this.byGpu.get(gpu);
    if (!dev) throw new GpuUnsupportedError(`${this.name}: gpu ${gpu} is not one of this backend's devices`);
    return dev.handle;
  }

  /**
   * `read()`'s value, or undefined where the library lacks a function it calls: then what is
   * lost (`lost`, e.g. "GPU names unknown") is recorded once with the missing function.
   */
  protected unlessLacking<T>(lost: string, read: () => T): T | undefined {
    try {
      return read();
    } catch (err) {
      if (!(err instanceof MissingLibraryFunctionError)) throw err;
      const reason = `${lost}: ${err.message}`;
      if (!this.problems.some((p) => p.reason === reason)) this.problems.push({ backend: this.name, reason });
      return undefined;
    }
  }

  /**
   * Gpu indices where `probe` works; records why it fails elsewhere. A function the library
   * lacks fails on every device alike: the row is dropped with one diagnostic naming it.
   */
  private probe(row: GpuQuery<D>, probe: (dev: D) => unknown): Set<number> {
    const ok = new Set<number>();
    for (const dev of this.devices) {
      try {
        probe(dev.handle);
        ok.add(dev.gpu);
      } catch (err) {
        if (err instanceof MissingLibraryFunctionError) {
          this.problems.push({ backend: this.name, signal: this.fullName(row.name), reason: err.message });
          return new Set();
        }
        if (err instanceof GpuUnsupportedError) {
          dev.unsupported.push(row.name);
        } else {
          this.problems.push({
            backend: this.name,
            signal: this.fullName(row.name),
            reason: `gpu ${dev.gpu}: ${errorMessage(err)}`,
          });
        }
      }
    }
    return ok;
  }

  private adapt(row: GpuQuery<D>, probe: (dev: D) => unknown): SignalDef<GpuSnapshot> | undefined {
    const supported = this.probe(row, probe);
    if (supported.size === 0) return undefined;
    this.rows.set(row.name, row);
    const { query: _q, scale: _s, ...spec } = row;
    return {
      ...spec,
      available: (gpu) => supported.has(gpu),
      read: (gpu, ctx) => {
        const value = ctx.current.get(key(row.name, gpu));
        if (value instanceof Error) throw value;
        return value ?? Number.NaN;
      },
    };
  }

  private adaptControl(row: GpuControl<D>): ControlDef<GpuSnapshot> | undefined {
    const def = this.adapt(row, (row.probe ?? row.query).bind(row));
    if (!def) return undefined;
    return { ...def, write: (gpu, value) => row.write(this.deviceAt(gpu), value) };
  }

  protected snapshot(requests: readonly { def: SignalDef<GpuSnapshot>; idx: number }[]): GpuSnapshot {
    const snap: GpuSnapshot = new Map();
    for (const { def, idx } of requests) {
      const k = key(def.name, idx);
      if (snap.has(k)) continue;
      const row = this.rows.get(def.name)!;
      try {
        snap.set(k, row.query(this.deviceAt(idx)) * row.scale);
      } catch (err) {
        snap.set(k, err instanceof Error ? err : new Error(String(err)));
      }
    }
    return snap;
  }

  override metadata(): Record<string, unknown> {
    return {
      library: this.lib.path,
      libraryLacks: this.lib.lacking,
      devices: this.devices.map(({ gpu, cpus, info, unsupported }) => ({ gpu, cpus, ...info, unsupported })),
    };
  }

  override async close(): Promise<void> {
    this.lib.shutDown();
  }
}
