import { execFileSync } from 'node:child_process';
import { errorMessage, InvalidArgumentError } from '../../platform/errors.js';

/**
 * What Slurm knows of a job, from `scontrol show job -o <id>` (one line of Key=Value pairs):
 * its node list and its start and end times (local time without a zone, as scontrol prints
 * them; "Unknown" while the job runs). Used when the job's environment does not say.
 */
export interface SlurmJobRecord {
  nodeList?: string;
  /** Unix seconds. */
  start?: number;
  end?: number;
}

/** Parses one `scontrol show job -o` record. */
export function parseScontrolJob(text: string): SlurmJobRecord {
  const field = (key: string) => new RegExp(`(?:^|\\s)${key}=(\\S+)`).exec(text)?.[1];
  const time = (value: string | undefined) => {
    if (value === undefined || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/.test(value)) return undefined;
    const t = Date.parse(value) / 1000;
    return Number.isFinite(t) ? t : undefined;
  };
  const nodeList = field('NodeList');
  return {
    nodeList: nodeList === undefined || nodeList === '(null)' ? undefined : nodeList,
    start: time(field('StartTime')),
    end: time(field('EndTime')),
  };
}

/** Asks scontrol about a job; a missing scontrol or unknown job is one clear error. */
export function scontrolJob(jobId: string): SlurmJobRecord {
  if (!/^\d+$/.test(jobId)) throw new InvalidArgumentError(`Slurm job id "${jobId}" is not a number`);
  let out: string;
  try {
    out = execFileSync('scontrol', ['show', 'job', '-o', jobId], {
      encoding: 'utf8',
      timeout: 15_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    // scontrol may explain over several lines (Debian's without a configuration prints four);
    // its last line is the reason, and the error stays one line.
    const lastLine = String((err as { stderr?: unknown }).stderr ?? '')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .at(-1);
    throw new InvalidArgumentError(
      `Slurm job ${jobId}: scontrol show job failed (${lastLine ?? errorMessage(err)}); give --nodes and --start`,
    );
  }
  return parseScontrolJob(out);
}
