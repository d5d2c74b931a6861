import { lstatSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { errorMessage, JoulegateError } from './errors.js';

/** Node's "ENOENT: no such file or directory, mkdir '/x'" without the call and path it repeats. */
export function ioReason(err: unknown): string {
  return errorMessage(err).replace(/, \w+ '.*'$/, '');
}

/** Whether something (even a dangling link) is at `p`; a file in the way counts as present. */
function present(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/**
 * `mkdir -p`: creates `path` and its missing parents, one mkdir per missing component, so it
 * ends after as many steps as the path has parts. Node's own recursive mkdir retries for ever
 * where mkdir keeps failing with ENOENT under a parent that exists (/proc/nope spins at 100 %
 * CPU). Throws a JoulegateError with the reason when `path` is not a usable directory after.
 */
export function makeDirs(path: string, mode = 0o777): void {
  const missing: string[] = [];
  for (let p = resolve(path); !present(p); p = dirname(p)) {
    missing.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode });
    } catch (err) {
      // Made meanwhile by someone else: fine if it is a directory, checked below.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new JoulegateError(`cannot create ${dir} (${ioReason(err)})`);
    }
  }
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink())
      throw new JoulegateError(`${path} is a symbolic link to a missing target`);
    if (code === 'ENOTDIR') throw new JoulegateError(`a part of ${path} is not a directory`);
    throw new JoulegateError(`${path}: ${ioReason(err)}`);
  }
  if (!isDir) throw new JoulegateError(`${path} exists and is not a directory`);
}
