import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Report } from '../monitor/model/report-model.js';
import { JoulegateError, ParseError, shortValue } from '../platform/errors.js';
import { ioReason } from '../platform/make-dirs.js';
import { threadCpuSeconds } from '../platform/process.js';

/*
 * Report files from elsewhere are untrusted: libhdf5 (wasm) can spin for ever, abort, or grow
 * its memory to GBs on a damaged file, and a JSON file can hold anything. Each is read in a
 * worker thread with a deadline, a JS heap limit and a wasm memory limit, all derived from the
 * file's size; whatever goes wrong ends in one line naming the file.
 */

/** What the worker is asked (read-worker.ts). */
export interface ReadJob {
  path: string;
  runId?: string;
  wasmBytes: number;
}

/**
 * What the worker answers: the report, or one line saying what is wrong with the file (`spent`:
 * the thread cannot read another).
 */
export type ReadOutcome = { report: Report } | { error: string; spent?: boolean };

/** The worker's first message: its thread in /proc (`<pid>/task/<tid>`), whose CPU time is the budget. */
export interface WorkerThread {
  thread: string;
}

export interface ReadLimits {
  /**
   * CPU time the reading thread may use (its start included when it is new). Wall-clock time
   * is bounded too, at WALL_FACTOR times this, for a thread that waits rather than works.
   */
  deadlineMs: number;
  /** The worker's V8 old generation. */
  heapMb: number;
  /** libhdf5's wasm memory. */
  wasmBytes: number;
}

const MB = 1 << 20;
/** A read's wall-clock bound as a multiple of its CPU budget: room for a machine busy 10× over. */
export const WALL_FACTOR = 10;
/** How often the reading thread's CPU time is looked at. */
const CPU_POLL_MS = 50;

/**
 * Bounds for a file of `size` bytes. A report's tree in memory is a few times its file (JSON
 * text → objects ~10×; HDF5 → wasm buffers plus JS arrays); the fixed parts cover a worker's
 * start and h5wasm's 4 MB of wasm on a loaded machine.
 */
export function readLimits(size: number): ReadLimits {
  const mb = size / MB;
  return {
    deadlineMs: Math.round(4000 + 1000 * mb),
    heapMb: Math.min(4096, Math.ceil(128 + 16 * mb)),
    wasmBytes: Math.min(1536 * MB, Math.ceil((32 + 8 * mb) * MB)),
  };
}

/**
 * The worker's module: beside this one in dist/report/, and reached from the CLI bundle in
 * dist/app/. Run from source (tests, benches under tsx), the worker registers tsx first: a
 * worker thread does not inherit the loader hooks of `--import tsx`.
 */
function workerScript(): { script: string | URL; eval: boolean } {
  if (!import.meta.url.endsWith('.ts'))
    return { script: new URL('../report/read-worker.js', import.meta.url), eval: false };
  const source = new URL('./read-worker.ts', import.meta.url).href;
  return {
    script: `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); });`,
    eval: true,
  };
}

/** `path: what is wrong`, unless the line names the file already. */
const naming = (path: string, line: string) =>
  line.includes(shortValue(path)) ? line : `${shortValue(path)}: ${line}`;

/**
 * Reads report files one at a time, each within bounds derived from its size, in a worker
 * thread kept for the next file while it is sound (starting one and loading h5wasm costs ~0.5 s):
 * a read that ran out of time or memory, or that libhdf5 aborted, ends the thread.
 */
export class ReportReader {
  private worker: Worker | undefined;
  private workerHeapMb = 0;
  /** The worker thread's stat file in /proc, once it said which it is. */
  private workerStat: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  /** Reads `path` (`runId`: a run of a perun .hdf5 file); every failure is one line naming the file. */
  read(path: string, runId?: string, limits?: ReadLimits): Promise<Report> {
    const done = this.queue.then(() => this.readNow(path, runId, limits));
    this.queue = done.catch(() => undefined);
    return done;
  }

  /** Ends the worker; a later read starts another. */
  close(): void {
    void this.worker?.terminate();
    this.worker = undefined;
    this.workerStat = undefined;
  }

  private workerFor(heapMb: number): Worker {
    if (this.worker && this.workerHeapMb >= heapMb) return this.worker;
    this.close();
    const { script, eval: isCode } = workerScript();
    const worker = new Worker(script, {
      eval: isCode,
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 8, stackSizeMb: 4 },
      // libhdf5's and emscripten's own prints are no news to a user: the answer says it in one line.
      stdout: true,
      stderr: true,
    });
    worker.stdout.resume();
    worker.stderr.resume();
    worker.on('message', (m: ReadOutcome | WorkerThread) => {
      if ('thread' in m && this.worker === worker) this.workerStat = `/proc/${m.thread}/stat`;
    });
    worker.unref();
    this.worker = worker;
    this.workerHeapMb = heapMb;
    return worker;
  }

  private async readNow(path: string, runId: string | undefined, limits?: ReadLimits): Promise<Report> {
    let size: number;
    try {
      size = statSync(path).size;
    } catch (err) {
      throw new JoulegateError(`cannot read ${shortValue(path)}: ${ioReason(err)}`);
    }
    const bounds = limits ?? readLimits(size);
    const job: ReadJob = { path, wasmBytes: bounds.wasmBytes, ...(runId === undefined ? {} : { runId }) };
    const worker = this.workerFor(bounds.heapMb);
    return new Promise<Report>((resolve, reject) => {
      const listeners = {
        message: (outcome: ReadOutcome | WorkerThread) => {
          if (!('thread' in outcome)) settle(outcome);
        },
        error: (err: Error & { code?: string }) =>
          settle(
            new ParseError(
              err.code === 'ERR_WORKER_OUT_OF_MEMORY'
                ? `${shortValue(path)}: reading it needs more than ${bounds.heapMb} MB (a damaged size or count?)`
                : `${shortValue(path)}: cannot read it (${shortValue(err.message.split('\n')[0]!, 200)})`,
            ),
          ),
        exit: (code: number) =>
          settle(new ParseError(`${shortValue(path)}: the reader ended (exit ${code}) without an answer`)),
      };
      const settle = (outcome: ReadOutcome | Error) => {
        clearTimeout(wallTimer);
        clearInterval(cpuTimer);
        worker.off('message', listeners.message).off('error', listeners.error).off('exit', listeners.exit);
        if (outcome instanceof Error || ('error' in outcome && outcome.spent)) this.close();
        if (outcome instanceof Error) reject(outcome);
        else if ('error' in outcome) reject(new ParseError(naming(path, shortValue(outcome.error, 300))));
        else resolve(outcome.report);
      };
      const tooLong = (what: string) =>
        settle(
          new ParseError(
            `${shortValue(path)}: reading it took over ${bounds.deadlineMs / 1000} s${what} (a damaged file?)`,
          ),
        );
      // The budget is the reading thread's CPU time: the same file gets the same verdict on an
      // idle and on a loaded machine. Until the thread said which it is, it counts from zero.
      const cpuAtStart = (this.workerStat && threadCpuSeconds(this.workerStat)) || 0;
      const cpuTimer = setInterval(() => {
        if (this.workerStat === undefined) return;
        const used = threadCpuSeconds(this.workerStat);
        if (used === undefined) return;
        if ((used - cpuAtStart) * 1000 > bounds.deadlineMs) tooLong(' of CPU time');
      }, CPU_POLL_MS);
      const wallTimer = setTimeout(() => tooLong(' (wall clock)'), bounds.deadlineMs * WALL_FACTOR);
      worker.on('message', listeners.message).on('error', listeners.error).on('exit', listeners.exit);
      worker.postMessage(job);
    });
  }
}

/**
 * Reads one report file (json or hdf5, ours or perun's) within bounds derived from its size;
 * `runId` picks a run of perun's .hdf5 or .json file. Every failure is one line naming the file.
 */
export async function readReportBounded(path: string, runId?: string, limits?: ReadLimits): Promise<Report> {
  const reader = new ReportReader();
  try {
    return await reader.read(path, runId, limits);
  } finally {
    reader.close();
  }
}
