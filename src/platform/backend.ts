import type { Aggregation } from './aggregation.js';
import type { DomainType } from './domains.js';
import type { FormatType } from './format.js';
import type { NativeRead } from './native-read.js';
import type { Behavior, ControlInfo, SavedControl, SignalInfo, Units } from './signal-info.js';
import type { Sysroot } from './sysroot.js';
import type { Topology } from './topology.js';

/** What every backend gets when it is set up. */
export interface BackendContext {
  sysroot: Sysroot;
  topology: Topology;
  /** Admin configuration directory (MSR tables, TDP table, …); may not exist. */
  configDir?: string;
}

/** Why something a user may expect is not there: a missing file, a permission, a library. */
export interface Diagnostic {
  backend: string;
  /** The signal concerned, or undefined when the whole backend is affected. */
  signal?: string;
  reason: string;
}

/**
 * The hardware abstraction: GEOPM's IOGroup (named signals/controls on topology domains with
 * push/batch/save/restore) in camelCase. perun's sensor view is derived from it generically
 * (see sensors.ts). I/O methods are async because some backends (the daemon client) talk to
 * another process; push/sample/adjust only touch memory and stay synchronous.
 */
export interface Backend {
  /** Short lowercase id used in sensor listings and config filters, e.g. `powercap`. */
  readonly id: string;
  /** The IOGroup name used as prefix of low-level names, e.g. `POWERCAP`. */
  readonly name: string;
  readonly description: string;
  metadata(): Record<string, unknown>;
  setup(ctx: BackendContext): Promise<void>;
  close(): Promise<void>;

  signalNames(): string[];
  controlNames(): string[];
  isValidSignal(name: string): boolean;
  isValidControl(name: string): boolean;
  signalInfo(name: string): SignalInfo;
  controlInfo(name: string): ControlInfo;
  /** Signals that exist on this node but cannot be read here, with the reason. */
  diagnostics(): Diagnostic[];
  /**
   * Why a name this backend serves on other nodes is not served here (a constant this node does
   * not state), by its full or its high-level name; undefined when it does not know.
   */
  whyNotServed?(name: string): string | undefined;
  /**
   * False where a signal does not exist at one native index (a GPU that lacks a function, a
   * sensor on one package only). Absent means every index of the native domain.
   */
  isSignalAvailable?(name: string, idx: number): boolean;
  /** Why isSignalAvailable is false at that index, in words; undefined where it is true. */
  whyUnavailable?(name: string, idx: number): string | undefined;

  pushSignal(name: string, domain: DomainType, idx: number): number;
  pushControl(name: string, domain: DomainType, idx: number): number;
  /**
   * Reads every pushed signal. A backend that read synchronously may return nothing (no
   * promise): a batch server sampling at 1 kHz then never waits on a microtask.
   */
  readBatch(): void | Promise<void>;
  writeBatch(): Promise<void>;
  sample(handle: number): number;
  /**
   * Why the last readBatch() gave NaN for this handle (the error a read threw), or undefined
   * when it has a value or no reason is known. Lets batch readers report the cause, not "NaN".
   */
  sampleError?(handle: number): Error | undefined;
  adjust(handle: number, value: number): void;
  /**
   * How a batch server's native loop can read this pushed handle with no JavaScript, or
   * undefined where it cannot (the batch then samples in JavaScript). Must give exactly what
   * readBatch() + sample() give for it.
   */
  nativeRead?(handle: number): NativeRead | undefined;
  readSignal(name: string, domain: DomainType, idx: number): Promise<number>;
  writeControl(name: string, domain: DomainType, idx: number, value: number): Promise<void>;
  /** Current setting of every low-level control at every native index. */
  saveControls(): Promise<SavedControl[]>;
  /** Writes each setting back, continuing past failures; throws one error listing them all. */
  restoreControls(settings: readonly SavedControl[]): Promise<void>;
}

export type { Aggregation, Behavior, DomainType, FormatType, Units };
