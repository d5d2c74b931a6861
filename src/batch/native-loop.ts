import { closeSync, constants, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { NATIVE_LOOP_ENV } from '../ipc/batch/protocol.js';
import { Aggregation, aggregationName } from '../platform/aggregation.js';
import { errorMessage, JoulegateError } from '../platform/errors.js';
import { loadKoffi } from '../platform/ffi.js';
import { SystemCallError } from '../platform/libc.js';
import type { NativeRead, NativeSignal } from '../platform/native-read.js';
import { PACKAGE } from '../platform/package-root.js';

/*
 * The batch server's sampling loop in C (src/batch/native-loop.c; why and what it covers:
 * docs/batch.md, "The native sampling loop"). Built by `npm run build` where a C compiler is
 * found; without it, or with JOULEGATE_BATCH_NATIVE_LOOP=0, every batch samples in JavaScript.
 */
export { NATIVE_LOOP_ENV };

/** Where `npm run build` puts the library (scripts/build-native.mjs). */
export function nativeLoopPath(): string | undefined {
  return PACKAGE && join(PACKAGE.root, 'dist', 'native', 'libjoulegate-batch.so');
}

/**
 * Which loop this process's batch servers will sample in, for the daemon's start-up line; the
 * library is only looked for (each server loads it and falls back on its own should that fail).
 */
export function nativeLoopStatus(env: NodeJS.ProcessEnv = process.env): string {
  if (env[NATIVE_LOOP_ENV] === '0') return `in JavaScript (${NATIVE_LOOP_ENV}=0)`;
  const path = nativeLoopPath();
  if (!path || !existsSync(path))
    return `in JavaScript (${path ?? 'the native loop'} is missing: npm run build makes it where cc is found)`;
  return `natively where every signal has a native read (${path})`;
}

/** Return values of jg_serve_reads() besides a message byte. */
const END_OF_STREAM = -1;
const READ_FOR_JS = -2;
const BAD_PLAN = -3;
const AWAY_FROM_CLIENT = -4;
const READ_ERROR = -1000;
const WRITE_ERROR = -2000;

/** What serve() returns besides a message byte: an `r` taken that JavaScript must answer. */
export const ANSWER_IN_JS = -2;
/** What serve() returns when the client closed its end. */
export const CLIENT_GONE = -1;
/** What serve() returns when a look found the client on another CPU: move, then call it again. */
export const AWAY_FROM_CLIENT_CPU = AWAY_FROM_CLIENT;

/** Linux's O_CLOEXEC (Node's fs.constants leaves it out): the files never reach a child. */
const O_CLOEXEC = 0o2000000;

const KIND: Record<NativeRead['kind'], number> = { clock: 0, 'decimal-file': 1, constant: 2 };
/** Bytes of struct jg_read and struct jg_signal in native-loop.c. */
const READ_BYTES = 24;
const SIGNAL_BYTES = 16;

/** The aggregations native-loop.c applies, with the results aggregate() gives for non-NaN values. */
const NATIVE_AGGREGATIONS = new Set<number>([
  Aggregation.Sum,
  Aggregation.Average,
  Aggregation.Min,
  Aggregation.Max,
  Aggregation.SelectFirst,
  Aggregation.ExpectSame,
]);

type ServeReads = (
  inFd: number,
  outFd: number,
  buffer: unknown,
  slotCount: number,
  slotSignal: Int32Array,
  signals: Buffer,
  signalCount: number,
  reads: Buffer,
  readCount: number,
  sampled: Float64Array,
  served: BigUint64Array,
  clientStat: number,
  lookEvery: number,
) => number;

let library: ServeReads | string | undefined;

/** The loop's entry point, or why there is none (the library is looked for once per process). */
export function loadNativeLoop(env: NodeJS.ProcessEnv = process.env): ServeReads | string {
  if (env[NATIVE_LOOP_ENV] === '0') return `${NATIVE_LOOP_ENV}=0`;
  if (library !== undefined) return library;
  const path = nativeLoopPath();
  try {
    if (!path) throw new Error('the joulegate package directory was not found');
    const lib = loadKoffi().load(path);
    library = lib.func(
      'int jg_serve_reads(int in_fd, int out_fd, void *buffer, int32_t slot_count, void *slot_signal, void *signals, int32_t signal_count, void *reads, int32_t read_count, void *sampled, void *served, int client_stat, uint32_t look_every)',
    ) as unknown as ServeReads;
  } catch (err) {
    library = `${path ?? 'the native loop'} could not be loaded: ${errorMessage(err).split('\n')[0]}`;
  }
  return library;
}

/** What PlatformIO offers the planner: the native reads of each pushed signal. */
export interface NativePlanSource {
  nativeSignal(handle: number): NativeSignal | undefined;
}

/**
 * The pushed signals of one batch as native reads, with the files they read held open. Made
 * only where every distinct signal has one (else `plan()` says why not and the batch samples in
 * JavaScript, as it always did).
 */
export class NativeSampler {
  /** Samples the native loop answered so far. */
  private readonly servedCount = new BigUint64Array(1);
  private readonly sampled: Float64Array;

  private constructor(
    private readonly serveReads: ServeReads,
    private readonly signals: Buffer,
    private readonly reads: Buffer,
    private readonly signalCount: number,
    private readonly fds: number[],
  ) {
    this.sampled = new Float64Array(signalCount);
  }

  /**
   * A sampler for the distinct pushed signals `handles` (in the server's order), or the reason
   * there is none. Opens each file a read needs; a file that cannot be opened leaves the batch
   * to JavaScript, whose read reports the error with each sample.
   */
  static plan(
    source: NativePlanSource,
    handles: Int32Array,
    names: readonly string[],
    env?: NodeJS.ProcessEnv,
  ): NativeSampler | string {
    if (handles.length === 0) return 'no signals';
    const plans: NativeSignal[] = [];
    for (const [i, handle] of handles.entries()) {
      const plan = source.nativeSignal(handle);
      if (!plan) return `${names[i]} has no native read`;
      if (plan.reads.length > 1 && !NATIVE_AGGREGATIONS.has(plan.aggregation))
        return `${names[i]}: ${aggregationName(plan.aggregation)} over ${plan.reads.length} reads is not applied natively`;
      plans.push(plan);
    }
    const serveReads = loadNativeLoop(env);
    if (typeof serveReads === 'string') return serveReads;
    const readCount = plans.reduce((n, p) => n + p.reads.length, 0);
    const signals = Buffer.alloc(SIGNAL_BYTES * plans.length);
    const reads = Buffer.alloc(READ_BYTES * readCount);
    const fds: number[] = [];
    try {
      let r = 0;
      plans.forEach((plan, i) => {
        signals.writeInt32LE(r, i * SIGNAL_BYTES);
        signals.writeInt32LE(plan.reads.length, i * SIGNAL_BYTES + 4);
        signals.writeInt32LE(plan.aggregation, i * SIGNAL_BYTES + 8);
        for (const read of plan.reads) {
          const at = READ_BYTES * r++;
          reads.writeInt32LE(KIND[read.kind], at);
          if (read.kind === 'clock') reads.writeBigInt64LE(read.originNs, at + 16);
          else if (read.kind === 'constant') reads.writeDoubleLE(read.value, at + 8);
          else {
            const fd = openSync(read.path, constants.O_RDONLY | O_CLOEXEC);
            fds.push(fd);
            reads.writeInt32LE(fd, at + 4);
            reads.writeDoubleLE(read.scale, at + 8);
          }
        }
      });
    } catch (err) {
      for (const fd of fds) closeSync(fd);
      return `a file of the batch could not be opened: ${errorMessage(err)}`;
    }
    return new NativeSampler(serveReads, signals, reads, plans.length, fds);
  }

  /**
   * Answers `r` messages until another message comes: returns that byte, CLIENT_GONE,
   * ANSWER_IN_JS (an `r` was taken and nothing of it stored: JavaScript answers it), or
   * AWAY_FROM_CLIENT_CPU when a look (every `look.every` answers, at the client's open
   * /proc/<pid>/stat `look.stat`) found the client on another CPU. `slots` maps each value of
   * the signal buffer at `buffer` to its distinct signal.
   */
  serve(
    channel: { read: number; write: number },
    buffer: unknown,
    slots: Int32Array,
    look: { stat: number; every: number } = { stat: -1, every: 0 },
  ): number {
    const rc = this.serveReads(
      channel.read,
      channel.write,
      buffer,
      slots.length,
      slots,
      this.signals,
      this.signalCount,
      this.reads,
      this.reads.length / READ_BYTES,
      this.sampled,
      this.servedCount,
      look.stat,
      look.every,
    );
    if (rc >= 0 || rc === END_OF_STREAM || rc === READ_FOR_JS || rc === AWAY_FROM_CLIENT) return rc;
    if (rc === BAD_PLAN) throw new JoulegateError('batch native loop: an index of its plan is out of range');
    if (rc <= WRITE_ERROR) throw new SystemCallError('write', `fd ${channel.write}`, WRITE_ERROR - rc);
    throw new SystemCallError('read', `fd ${channel.read}`, READ_ERROR - rc);
  }

  get served(): number {
    return Number(this.servedCount[0]);
  }

  close(): void {
    for (const fd of this.fds.splice(0)) {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    }
  }
}
