import { readlinkSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { errorMessage } from '../platform/errors.js';
import type { ReadJob, ReadOutcome, WorkerThread } from './bounded-read.js';

/*
 * The worker thread of bounded-read.ts: reads one report file and posts the report, or one
 * line saying what is wrong with the file. Its JS heap is bounded by the thread's resource
 * limits; libhdf5's wasm memory by the limit installed here.
 */

/** The job being read: its memory limit is the one in force. */
let job: ReadJob = { path: '', wasmBytes: 0 };

/**
 * libhdf5 (compiled to wasm) grows its memory through WebAssembly.Memory#grow from JS when
 * malloc runs out; refused here above the job's limit, malloc fails and HDF5 reports an error
 * instead of growing to 2 GB on a length field that a damaged file sets huge.
 */
/** The part of the wasm API used here (the project compiles without the DOM's types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const wasm = (
  globalThis as unknown as {
    WebAssembly: { Memory: { prototype: WasmMemory }; RuntimeError: ErrorConstructor };
  }
).WebAssembly;
const grow = wasm.Memory.prototype.grow;
let overLimit = false;
wasm.Memory.prototype.grow = function (this: WasmMemory, pages: number) {
  if (this.buffer.byteLength + pages * 65536 > job.wasmBytes) {
    overLimit = true;
    throw new RangeError('over the memory limit of this read');
  }
  return grow.call(this, pages);
};

/**
 * The answer for an error thrown by the reader or the HDF5 library under it: one line, and
 * whether this thread can read another file (libhdf5 is unusable after an abort, and memory it
 * was refused may have left it half way).
 */
function failure(err: unknown): ReadOutcome {
  const message = errorMessage(err);
  if (overLimit)
    return {
      error: `reading it needs more than ${job.wasmBytes >> 20} MB (a damaged size or count?)`,
      spent: true,
    };
  // emscripten's abort: "Aborted(native code called abort())" and the like, no news to a user.
  if (err instanceof wasm.RuntimeError || /Aborted\(|Cannot enlarge memory|RuntimeError/.test(message))
    return { error: 'damaged HDF5 file (the HDF5 library stopped on it)', spent: true };
  return { error: message.split('\n')[0]! };
}

async function read(next: ReadJob): Promise<ReadOutcome> {
  job = next;
  overLimit = false;
  try {
    const { readReportHere } = await import('./read.js');
    const shape: typeof import('./report-shape.js') = await import('./report-shape.js');
    const report = await readReportHere(job.path, job.runId);
    shape.checkReportShape(report, job.path);
    return { report };
  } catch (err) {
    return failure(err);
  }
}

// Which thread this is, so the reader can hold it to a budget of CPU time (Linux' /proc).
try {
  const thread: WorkerThread = { thread: readlinkSync('/proc/thread-self') };
  parentPort!.postMessage(thread);
} catch {
  // no /proc: the wall-clock bound alone holds
}

parentPort!.on('message', (next: ReadJob) => {
  void read(next).then((outcome) => parentPort!.postMessage(outcome));
});
