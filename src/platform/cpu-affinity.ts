import { errnoValue, lastErrno, libc, SystemCallError } from './libc.js';

/** The CPU the calling thread runs on now. */
export function currentCpu(): number {
  return libc().sched_getcpu();
}

/** Largest CPU mask asked for: 64 Ki CPUs. */
const MAX_MASK_BYTES = 8192;

/**
 * The calling thread's CPU mask. Starts at glibc's cpu_set_t (1024 CPUs) and doubles while the
 * kernel says the set is too small for its CPU count (EINVAL).
 */
function threadMask(): Buffer {
  for (let size = 128; size <= MAX_MASK_BYTES; size *= 2) {
    const mask = Buffer.alloc(size);
    if (libc().sched_getaffinity(0, size, mask) >= 0) return mask;
    const errno = lastErrno();
    if (errno !== errnoValue('EINVAL'))
      throw new SystemCallError('sched_getaffinity', 'of this thread', errno);
  }
  throw new SystemCallError('sched_getaffinity', 'of this thread', errnoValue('EINVAL'));
}

const hasCpu = (mask: Buffer, cpu: number) =>
  cpu >= 0 && cpu < mask.length * 8 && (mask[cpu >> 3]! & (1 << (cpu & 7))) !== 0;

function setThreadMask(mask: Buffer): void {
  if (libc().sched_setaffinity(0, mask.length, mask) !== 0)
    throw new SystemCallError('sched_setaffinity', 'of this thread', lastErrno());
}

/**
 * Moves the calling thread to `cpu` once, leaving its CPU mask as it was: the mask is narrowed
 * to `cpu` (the kernel migrates the thread before the call returns) and set back at once, so
 * the scheduler may move the thread again later as it sees fit. Not done where the mask does
 * not allow `cpu` (a cpuset, taskset): 'not allowed'.
 */
export function moveCurrentThreadTo(cpu: number): 'moved' | 'not allowed' {
  const mask = threadMask();
  if (!hasCpu(mask, cpu)) return 'not allowed';
  const only = Buffer.alloc(mask.length);
  only[cpu >> 3] = 1 << (cpu & 7);
  setThreadMask(only);
  try {
    setThreadMask(mask);
  } catch (err) {
    // The mask may have lost every CPU meanwhile (a cpuset changed): all CPUs the cpuset allows.
    try {
      setThreadMask(Buffer.alloc(mask.length, 0xff));
    } catch {
      throw err;
    }
  }
  return 'moved';
}

/** The calling thread's allowed CPUs, in order (for tests and logs). */
export function allowedCpus(): number[] {
  const mask = threadMask();
  const cpus: number[] = [];
  for (let cpu = 0; cpu < mask.length * 8; cpu++) if (hasCpu(mask, cpu)) cpus.push(cpu);
  return cpus;
}
