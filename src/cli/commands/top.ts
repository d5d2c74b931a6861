import { type Command, InvalidArgumentError as OptionError } from 'commander';
import type { IdlePolicy } from '../../attribution/engine.js';
import type { TopRow, TopTable } from '../../monitor/top.js';
import { addIdleOptions, watts as wattsOption } from './attribute-options.js';

function positive(kind: 'seconds' | 'integer') {
  return (value: string): number => {
    const n = Number(value);
    const ok = kind === 'integer' ? Number.isSafeInteger(n) && n >= 1 : Number.isFinite(n) && n >= 0.05;
    if (value.trim() === '' || !ok)
      throw new OptionError(kind === 'integer' ? 'expected an integer ≥ 1' : 'expected seconds ≥ 0.05');
    return n;
  };
}

const watts = (w: number | undefined) => (w === undefined ? '-' : `${w.toFixed(2)} W`);

/** The table as text: consumers by power, then the rest, unattributed, idle and the node. */
export function renderTopTable(t: TopTable, now: Date): string {
  // One column per group measured, in the meter's order of groups.
  const groups = [...new Set(t.sources.map((s) => s.group))];
  const header = ['CONSUMER', 'POWER', ...groups.map((g) => g.toUpperCase()), 'SHARE'];
  const share = (r: TopRow) => (t.node.watts > 0 ? `${((100 * r.watts) / t.node.watts).toFixed(1)} %` : '-');
  const line = (r: TopRow) => [
    r.unknown === undefined ? r.id : `${r.id} (?)`,
    watts(r.watts),
    ...groups.map((g) => watts(r.byGroup[g])),
    share(r),
  ];
  const rows = [
    ...t.consumers.map(line),
    ...(t.rest ? [line(t.rest)] : []),
    line(t.unattributed),
    line(t.idle),
    line(t.node),
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const format = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const how = t.sources.map((s) => `${s.group} ${s.method}`).join(', ') || 'no energy source';
  const out = [
    `joulegate top  ${now.toISOString()}  period ${t.durationS.toFixed(2)} s  (${how})`,
    format(header),
  ];
  out.push(...rows.map(format));
  if (t.noConsumers !== undefined) out.push(`no consumers: ${t.noConsumers}`);
  if (t.cpuTimesProblem !== undefined) {
    out.push(
      `node CPU time unknown (${t.cpuTimesProblem}): the consumers' use cannot be told apart from other processes'`,
    );
  }
  if (t.missing.length > 0) out.push(`not measured in this period: ${t.missing.join(', ')}`);
  const unknown = [...t.consumers, ...(t.rest ? [t.rest] : [])].filter((r) => r.unknown !== undefined);
  for (const r of unknown) out.push(`(?) ${r.id}: ${r.unknown} — its energy is in (unattributed)`);
  return `${out.join('\n')}\n`;
}

/** `joulegate top`: a live per-consumer power table of this node. */
export function register(program: Command): void {
  const cmd = program
    .command('top')
    .summary('Live power of the consumers of this node (Slurm jobs, users, system units)')
    .description(
      "Every period, the node's measured energy split among the Slurm jobs, users' sessions and system " +
        'units found in the cgroup tree, sorted by power, with what no consumer ran (unattributed) and ' +
        'the idle part (docs/attribution.md). Plain text when stdout is not a terminal.',
    )
    .option('--period <s>', 'seconds between tables', positive('seconds'), 1)
    .option('--once', 'print one table and exit')
    .option('--iterations <N>', 'print N tables and exit', positive('integer'))
    .option('--top <N>', 'consumers shown (the rest is summed in one row)', positive('integer'), 20)
    .option(
      '--estimate-tdp <W>',
      'package TDP for the CPU estimate where nothing is measured (default: model table)',
      wattsOption,
    );
  addIdleOptions(cmd);
  cmd.action(async (opts: Record<string, unknown>) => {
    const [{ runTop }, { openPlatform }, { Sysroot }] = await Promise.all([
      import('../../monitor/top.js'),
      import('../../backends/open-platform.js'),
      import('../../platform/sysroot.js'),
    ]);
    const pio = await openPlatform();
    const tty = process.stdout.isTTY === true;
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, onSignal);
    try {
      await runTop({
        pio,
        root: new Sysroot(),
        periodS: opts.period as number,
        iterations: opts.once ? 1 : (opts.iterations as number | undefined),
        limit: opts.top as number,
        idleShare: opts.idleShare as IdlePolicy,
        cpuIdleW: opts.idlePower as number[] | undefined,
        estimateTdp: (opts.estimateTdp as number | undefined) ?? 0,
        signal: stop.signal,
        warn: (line) => process.stderr.write(`joulegate top: ${line}\n`),
        onTable: (t) => {
          // A terminal gets the table in place; a pipe or file one table after the other.
          process.stdout.write(
            `${tty ? '\x1b[H\x1b[2J' : ''}${renderTopTable(t, new Date())}${tty ? '' : '\n'}`,
          );
        },
      });
    } finally {
      for (const sig of ['SIGINT', 'SIGTERM'] as const) process.off(sig, onSignal);
      await pio.close();
    }
  });
}
