/**
 * `joulegate access` (geopmaccess) options and their rules. Kept pure so every rule is tested
 * without a daemon.
 */
export interface AccessOptions {
  version?: boolean;
  controls?: boolean;
  default?: boolean;
  group?: string;
  all?: boolean;
  log?: boolean;
  write?: boolean;
  edit?: boolean;
  delete?: boolean;
  dryRun?: boolean;
  force?: boolean;
  direct?: boolean;
}

type Flag = Exclude<keyof AccessOptions, 'version' | 'controls' | 'direct'>;

const FLAG_TEXT: Record<Flag, string> = {
  default: '-u/--default',
  group: '-g/--group',
  all: '-a/--all',
  log: '-l/--log',
  write: '-w/--write',
  edit: '-e/--edit',
  delete: '-D/--delete',
  dryRun: '-n/--dry-run',
  force: '-F/--force',
};

/** Options of which at most one may be given (geopmaccess's argparse groups). */
const EXCLUSIVE_GROUPS: Flag[][] = [
  ['default', 'group', 'all', 'log'],
  ['write', 'edit', 'delete'],
  ['dryRun', 'force'],
];

/** Combinations argparse lets through but that make no sense (checked after parsing). */
const RUNTIME_RULES: { when: Flag[]; with: Flag[] }[] = [
  { when: ['all', 'log'], with: ['write', 'edit', 'delete'] },
  { when: ['dryRun'], with: ['edit', 'delete'] },
  { when: ['force'], with: ['edit'] },
];

export type AccessAction =
  | { kind: 'user' }
  | { kind: 'group'; group: string }
  | { kind: 'all' }
  | { kind: 'log' }
  | { kind: 'write'; group: string; source: 'stdin' | 'editor' | 'empty' };

export class UsageError extends Error {
  constructor(
    message: string,
    /** 2 for argparse-style group conflicts, 255 for the run-time checks (as geopmaccess). */
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

const given = (o: AccessOptions, f: Flag) => o[f] !== undefined && o[f] !== false;

/** What to do, or a UsageError naming the offending options. */
export function planAccess(o: AccessOptions): AccessAction {
  for (const group of EXCLUSIVE_GROUPS) {
    const set = group.filter((f) => given(o, f));
    if (set.length > 1) {
      throw new UsageError(
        `argument ${FLAG_TEXT[set[1]!]}: not allowed with argument ${FLAG_TEXT[set[0]!]}`,
        2,
      );
    }
  }
  for (const rule of RUNTIME_RULES) {
    const a = rule.when.find((f) => given(o, f));
    const b = rule.with.find((f) => given(o, f));
    if (a && b) throw new UsageError(`Option ${FLAG_TEXT[a]} cannot be used with ${FLAG_TEXT[b]}`, 255);
  }
  const writing = given(o, 'write') || given(o, 'edit') || given(o, 'delete');
  if (!writing && (given(o, 'dryRun') || given(o, 'force'))) {
    throw new UsageError(
      'Options -n/--dry-run and -F/--force only apply with -w/--write or -D/--delete',
      255,
    );
  }
  if (o.direct && !given(o, 'group') && !given(o, 'default')) {
    throw new UsageError('Must specify either --group or --default with --direct.', 255);
  }
  if (o.group !== undefined && o.group === '') {
    throw new UsageError('Option -g/--group needs a group name; use -u/--default for the default list', 255);
  }
  const group = o.group ?? '';
  if (writing) return { kind: 'write', group, source: o.write ? 'stdin' : o.edit ? 'editor' : 'empty' };
  if (o.all) return { kind: 'all' };
  if (o.log) return { kind: 'log' };
  if (o.group !== undefined || o.default) return { kind: 'group', group };
  return { kind: 'user' };
}
