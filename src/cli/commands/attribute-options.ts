import { type Command, Option, InvalidArgumentError as OptionError } from 'commander';
import type { ConsumerSpec } from '../../attribution/consumers.js';
import { IDLE_POLICIES, type IdlePolicy } from '../../attribution/engine.js';
import type { AttributionSetup } from '../../attribution/run.js';

/**
 * The options of energy attribution (docs/attribution.md) shared by `monitor --attribute` and
 * `top`: the idle policy and model, and for the monitor the named consumers next to the app.
 */

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** An option value in watts, ≥ 0. */
export function watts(value: string): number {
  const w = Number(value);
  if (value.trim() === '' || !Number.isFinite(w) || w < 0) throw new OptionError('expected watts ≥ 0');
  return w;
}

export function addIdleOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option('--idle-share <policy>', 'who gets the idle energy: none (kept apart), cpu-time or equal')
        .choices(IDLE_POLICIES)
        .default('none'),
    )
    .option(
      '--idle-power <W[,W...]>',
      'idle power of each CPU package, one value or one per package (default: no idle model)',
      (v: string) => v.split(',').map(watts),
    );
}

export function addConsumerOptions(cmd: Command): Command {
  return cmd
    .option(
      '--attribute',
      "report the app's share of the node's energy and what else ran (docs/attribution.md)",
    )
    .option(
      '--pid <N>',
      'also attribute to this process tree (repeatable; implies --attribute)',
      (v: string, prev: string[] = []) => collect(pidText(v), prev),
    )
    .option('--cgroup <path>', 'also attribute to this cgroup (repeatable; implies --attribute)', collect)
    .option(
      '--slurm-job [N]',
      'also attribute to this Slurm job, default $SLURM_JOB_ID (repeatable; implies --attribute)',
      (v: string, prev: (string | true)[] = []) => [...prev, v],
    )
    .option(
      '--container <id>',
      'also attribute to this container (repeatable; implies --attribute)',
      collect,
    );
}

/** The consumers named on the command line, in a stable order; undefined when attribution is off. */
export function consumerSpecs(opts: Record<string, unknown>): ConsumerSpec[] | undefined {
  const list = (key: string) => (opts[key] as (string | true)[] | undefined) ?? [];
  const slurm = opts.slurmJob === true ? [true as const] : list('slurmJob');
  const specs: ConsumerSpec[] = [
    ...list('pid').map((p): ConsumerSpec => ({ kind: 'pid-tree', pid: Number(p) })),
    ...list('cgroup').map((path): ConsumerSpec => ({ kind: 'cgroup', path: String(path) })),
    ...slurm.map(
      (id): ConsumerSpec => (id === true ? { kind: 'slurm-job' } : { kind: 'slurm-job', jobId: id }),
    ),
    ...list('container').map((id): ConsumerSpec => ({ kind: 'container', id: String(id) })),
  ];
  return opts.attribute === true || specs.length > 0 ? specs : undefined;
}

function pidText(text: string): string {
  if (!/^[1-9]\d*$/.test(text)) throw new OptionError('not a process id');
  return text;
}

/** `monitor`'s attribution setup from its options (consumers opened now), or undefined when off. */
export async function attributionSetup(opts: Record<string, unknown>): Promise<AttributionSetup | undefined> {
  const specs = consumerSpecs(opts);
  if (specs === undefined) return undefined;
  const [{ openConsumer }, { Sysroot }] = await Promise.all([
    import('../../attribution/consumers.js'),
    import('../../platform/sysroot.js'),
  ]);
  const root = new Sysroot();
  return {
    idleShare: opts.idleShare as IdlePolicy,
    cpuIdleW: opts.idlePower as number[] | undefined,
    root,
    consumers: specs.map((spec) => openConsumer(spec, root)),
  };
}
