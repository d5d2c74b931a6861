import { accessSync, constants, statSync } from 'node:fs';
import { basename, extname } from 'node:path';

/** Interpreters for scripts that are not executable, as perun runs a script it is given. */
const INTERPRETERS: Readonly<Record<string, string>> = { '.py': 'python3', '.sh': 'sh' };

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The command to start for `monitor CMD ARGS…`. A `.py` or `.sh` file given by name runs as
 * perun's users expect: with `python3` or `sh` when it is not executable, by its path (not a
 * PATH search) when it is. Anything else is started as given.
 */
export function appCommand(command: readonly string[]): string[] {
  const [first, ...args] = command;
  if (first === undefined) return [];
  const interpreter = INTERPRETERS[extname(first)];
  if (interpreter === undefined || !isFile(first)) return [...command];
  if (!isExecutable(first)) return [interpreter, first, ...args];
  return [first.includes('/') ? first : `./${first}`, ...args];
}

/** An interpreter whose first non-option argument is the script it runs. */
const SCRIPT_RUNNER = /^(python[\d.]*|pypy[\d.]*|sh|bash|dash|zsh|node|Rscript|perl|ruby)$/;

/**
 * The app's name in reports (perun: the script's stem): `train` for `train.py`,
 * `python3 -u train.py` and `python3 -m pkg.train`; otherwise the program's own name.
 */
export function appNameOf(command: readonly string[]): string {
  const stem = (path: string) => basename(path).replace(/\.[^.]+$/, '');
  const program = command[0] ?? '';
  if (SCRIPT_RUNNER.test(basename(program))) {
    for (let i = 1; i < command.length; i++) {
      const arg = command[i]!;
      if (arg === '-m' && command[i + 1]) return command[i + 1]!.split('.').pop()!;
      if (arg === '-c' || arg === '-e') break;
      if (!arg.startsWith('-')) return stem(arg) || 'app';
    }
  }
  return stem(program) || 'app';
}
