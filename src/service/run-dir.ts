import { closeSync, constants, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { errnoValue, lastErrno, libc, SystemCallError } from '../platform/libc.js';
import type { Log } from './secure-files.js';

const LOCK_EX = 2;
const LOCK_NB = 4;

/**
 * Takes the daemon's single-instance lock: an exclusive flock(2) on the run directory itself,
 * held for the daemon's life (the descriptor stays open, close-on-exec so no child inherits it)
 * and dropped by the kernel however the daemon ends. Returns undefined when taken, else why
 * not: a second daemon on the same run dir must stop before it touches anything there.
 * Unprivileged users cannot take it first: a run dir of mode 0711 cannot be opened by them.
 */
export function lockRunDir(runDir: string): string | undefined {
  const fd = openSync(runDir, constants.O_RDONLY | constants.O_DIRECTORY);
  if (libc().flock(fd, LOCK_EX | LOCK_NB) === 0) return undefined;
  const errno = lastErrno();
  closeSync(fd);
  if (errno !== errnoValue('EWOULDBLOCK')) throw new SystemCallError('flock', runDir, errno);
  const holder = lockHolder(runDir);
  return `another joulegated${holder === undefined ? '' : ` (pid ${holder})`} is running on ${runDir}`;
}

/** The pid holding a flock on `path`, from /proc/locks (for the message only). */
function lockHolder(path: string): number | undefined {
  try {
    const inode = statSync(path).ino;
    for (const line of readFileSync('/proc/locks', 'utf8').split('\n')) {
      const m = /^\d+: FLOCK\s+\S+\s+WRITE\s+(\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(line);
      if (m && Number(m[2]) === inode) return Number(m[1]);
    }
  } catch {
    // no /proc/locks: the message goes without the pid
  }
  return undefined;
}

/**
 * What a crash can leave in the run dir: the temporary of an atomic write (`<name>-tmp-<uuid>`),
 * a half-made save of controls (`SAVE_FILES-<uuid>-tmp`), and batch buffers and FIFOs (no
 * batch server of this daemon exists yet, and those of an earlier one are ended at start).
 */
const DEBRIS = [
  /-tmp-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  /^SAVE_FILES-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-tmp$/,
  /^batch-(buffer-\d+-(signal|control)|status-\d+-(in|out))$/,
];

/** Removes crash debris from the run dir (call with the lock held), one log line per name. */
export function removeCrashDebris(runDir: string, log: Log): void {
  for (const name of readdirSync(runDir)) {
    if (!DEBRIS.some((pattern) => pattern.test(name))) continue;
    rmSync(join(runDir, name), { recursive: true, force: true });
    log(`joulegated: removed ${name} left in ${runDir} by an earlier run`);
  }
}
