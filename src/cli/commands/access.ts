import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { errorMessage } from '../../platform/errors.js';
import { VERSION } from '../../platform/version.js';
import { parseAccessList, sortedUnique } from '../../service/access/list-file.js';
import { type AccessOptions, planAccess, UsageError } from '../access/options.js';
import type { AccessKind, AccessStore } from '../access/stores.js';

const DESCRIPTION = [
  'Show or change which signals and controls users may use through the joulegate service (compatible with geopmaccess).',
  'With no options, prints the signals the caller may read (with -c: the controls it may write). Lists are read from and written to the running service unless --direct is given.',
  'Names to write are read from standard input, one per line; blank lines and lines starting with # are ignored. Output is sorted, one name per line.',
].join('\n\n');

/** `joulegate access`: geopmaccess. */
export function register(program: Command): void {
  program
    .command('access')
    .summary('Show or change the access lists of the service (geopmaccess)')
    .description(DESCRIPTION)
    .option('-v, --version', 'print the version and exit')
    .option('-c, --controls', 'act on controls instead of signals')
    .option('-u, --default', 'the default list, which applies to every user')
    .option('-g, --group <group>', 'the list of a Unix group')
    .option('-a, --all', 'every name the service supports')
    .option('-l, --log', 'names requested from the service since it started (admin)')
    .option('-w, --write', 'write the names on stdin to the list (default list unless -g)')
    .option('-e, --edit', 'edit the list in $EDITOR, then write it')
    .option('-D, --delete', 'write an empty list')
    .option('-n, --dry-run', 'check the names, write nothing')
    .option('-F, --force', 'write names this node does not support (shared configs)')
    .option('-x, --direct', 'use the list files directly instead of the service (root; needs -g or -u)')
    .action(async (opts: AccessOptions) => {
      process.exitCode = await runAccess(opts);
    });
}

export async function runAccess(opts: AccessOptions): Promise<number> {
  try {
    if (opts.version) {
      process.stdout.write(`${VERSION}\n`);
      return 0;
    }
    const action = planAccess(opts);
    // The D-Bus client loads only when `access` runs, keeping every other command's start cheap.
    const { DaemonAccessStore, DirectAccessStore } = await import('../access/stores.js');
    const store: AccessStore = opts.direct ? new DirectAccessStore() : await DaemonAccessStore.connect();
    const kind: AccessKind = opts.controls ? 'controls' : 'signals';
    try {
      if (action.kind === 'write') {
        const names = await namesToWrite(action.source, () =>
          store.groupAccess(action.group).then((a) => a[kind]),
        );
        await store.setAccess(action.group, kind, names, { force: opts.force, dryRun: opts.dryRun });
        return 0;
      }
      const lists =
        action.kind === 'user'
          ? await store.userAccess()
          : action.kind === 'all'
            ? await store.allAccess()
            : action.kind === 'log'
              ? await store.logAccess()
              : await store.groupAccess(action.group);
      const names = sortedUnique(lists[kind]);
      process.stdout.write(names.map((n) => `${n}\n`).join(''));
      return 0;
    } finally {
      store.close();
    }
  } catch (err) {
    if (process.env.JOULEGATE_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    // geopmaccess's format: the message, a blank line, status 255 (-1).
    process.stderr.write(`Error: ${errorMessage(err)}\n\n`);
    return err instanceof UsageError ? err.exitCode : 255;
  }
}

async function namesToWrite(
  source: 'stdin' | 'editor' | 'empty',
  current: () => Promise<string[]>,
): Promise<string[]> {
  if (source === 'empty') return [];
  if (source === 'stdin') {
    let text = '';
    for await (const chunk of process.stdin) text += chunk;
    return parseAccessList(text);
  }
  return parseAccessList(editText((await current()).map((n) => `${n}\n`).join('')));
}

/** Opens `text` in $EDITOR (default vi) and returns what the user saved. */
function editText(text: string): string {
  const editor = process.env.EDITOR || ['/usr/bin/vi', '/bin/vi'].find((p) => existsSync(p));
  if (!editor) throw new Error('No editor: set EDITOR');
  const dir = mkdtempSync(join(tmpdir(), 'joulegate-access-'));
  try {
    const file = join(dir, 'names');
    writeFileSync(file, text, { mode: 0o600 });
    // Through sh so EDITOR may carry arguments ("code --wait"), as with git.
    const r = spawnSync('/bin/sh', ['-c', `${editor} "$1"`, 'editor', file], { stdio: 'inherit' });
    if (r.error) throw new Error(`cannot run editor "${editor}": ${r.error.message}`);
    if (r.status !== 0)
      throw new Error(`editor "${editor}" exited with status ${r.status ?? r.signal}; nothing written`);
    return readFileSync(file, 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
