import {
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFileAtomic } from '../platform/atomic-file.js';
import { errorMessage } from '../platform/errors.js';
import { processExists } from '../platform/process.js';
import { sleepSync } from '../platform/sleep-sync.js';
import type { AppExit, RankMember, RanksInfo, RegionEvent } from './model/report-model.js';

/*
 * Several monitors of one job on one node (`srun -n 8 joulegate monitor …`, `mpirun -n 4 …`)
 * measure the node once. They meet in a directory per user, job and host: each registers
 * (members/<pid>), and the first to create `sampler` (linked whole: createComplete) samples the
 * node; the others sample nothing and, when their app exits, leave its times, exit and region
 * events in done/<pid>. The sampler keeps sampling after its own app has exited until every
 * member is done (or dead), takes their regions into its report, closes the directory's election
 * (renames `sampler`) and removes what the ranks it collected left there, and the directories
 * once they are empty. Times are CLOCK_MONOTONIC ms (clock.ts), which every process of the node
 * shares. See docs/monitor.md ("Several ranks on one node").
 */

/** How one monitor process of a parallel job is known. */
export interface RankIdentity {
  /** The job (and step) every rank of it shares, and where it came from. */
  key: string;
  rank: string;
  source: string;
}

const RANK_VARS = ['SLURM_PROCID', 'OMPI_COMM_WORLD_RANK', 'PMIX_RANK', 'PMI_RANK'] as const;

/**
 * The job key and rank from the launcher's environment; undefined outside a parallel launch.
 * `JOULEGATE_JOB_KEY` names the job where the launcher gives no shared id; without one, the
 * ranks a launcher started on this node share its process (the parent) as the key.
 */
export function rankIdentity(env: NodeJS.ProcessEnv, parentPid = process.ppid): RankIdentity | undefined {
  const rankVar = RANK_VARS.find((v) => env[v] !== undefined && env[v] !== '');
  const explicit = env.JOULEGATE_JOB_KEY;
  if (rankVar === undefined && !explicit) return undefined;
  const rank = rankVar ? env[rankVar]! : String(process.pid);
  if (explicit) return { key: `key-${explicit}`, rank, source: 'JOULEGATE_JOB_KEY' };
  if (env.SLURM_JOB_ID)
    return {
      key: `slurm-${env.SLURM_JOB_ID}.${env.SLURM_STEP_ID ?? 'batch'}`,
      rank,
      source: `SLURM_JOB_ID/SLURM_STEP_ID, ${rankVar}`,
    };
  if (env.PMIX_NAMESPACE)
    return { key: `pmix-${env.PMIX_NAMESPACE}`, rank, source: `PMIX_NAMESPACE, ${rankVar}` };
  if (env.OMPI_MCA_ess_base_jobid)
    return {
      key: `ompi-${env.OMPI_MCA_ess_base_jobid}`,
      rank,
      source: `OMPI_MCA_ess_base_jobid, ${rankVar}`,
    };
  return { key: `launcher-${parentPid}`, rank, source: `${rankVar}, the launching process ${parentPid}` };
}

/** What a finished rank leaves for the sampler. */
export interface DoneRecord {
  rank: string;
  pid: number;
  startMs: number;
  stopMs: number;
  exit: AppExit;
  events: RegionEvent[];
}

const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_');

/** The meeting directory of a job's ranks on this node, private to the user. */
export function ranksDir(id: RankIdentity, env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_RUNTIME_DIR || tmpdir();
  const uid = process.getuid?.() ?? 0;
  return join(base, `joulegate-ranks-${uid}`, `${safe(id.key)}@${safe(hostname())}`);
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** How long a sampler claim that cannot be read is waited for before it is taken over. */
const CLAIM_READ_WAIT_MS = 2000;

/**
 * Creates `path` holding `contents` unless it exists (EEXIST), never visible half-written: the
 * contents go to a file of this process first, which is then linked to `path`. (An O_EXCL create
 * followed by a write let a rank starting at the same moment read the claim empty.)
 */
function createComplete(path: string, contents: string): void {
  const temp = `${path}.new-${process.pid}`;
  writeFileSync(temp, contents, { mode: 0o600 });
  try {
    linkSync(temp, path);
  } finally {
    rmSync(temp, { force: true });
  }
}

/**
 * The sampler claim at `path`: its holder; 'gone' when there is no claim (closed meanwhile); or
 * undefined when it stays unreadable for CLAIM_READ_WAIT_MS (not one this version writes).
 */
function readClaim(path: string): { rank: string; pid: number } | 'gone' | undefined {
  const deadline = Date.now() + CLAIM_READ_WAIT_MS;
  for (;;) {
    try {
      const holder = JSON.parse(readFileSync(path, 'utf8')) as { rank?: unknown; pid?: unknown };
      if (typeof holder.rank === 'string' && Number.isInteger(holder.pid))
        return { rank: holder.rank, pid: holder.pid as number };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    }
    if (Date.now() >= deadline) return undefined;
    // The election runs before the app starts, synchronously: a short blocking pause.
    sleepSync(10);
  }
}

/** One monitor's part in its node's election. */
export class NodeRanks {
  readonly role: 'sampler' | 'contributor';
  /** The sampler's rank and pid (this process's when it samples). */
  readonly sampler: { rank: string; pid: number };
  private readonly pid = process.pid;

  private constructor(
    readonly id: RankIdentity,
    readonly dir: string,
    role: 'sampler' | 'contributor',
    sampler: { rank: string; pid: number },
    readonly notes: string[],
  ) {
    this.role = role;
    this.sampler = sampler;
  }

  /** Registers this monitor and takes part in the election (a dead sampler's claim is taken over). */
  static join(id: RankIdentity, dir = ranksDir(id)): NodeRanks {
    const notes: string[] = [];
    const me = { rank: id.rank, pid: process.pid };
    // A finishing sampler may remove the emptied directories between these steps: make them again.
    for (let attempt = 0; ; attempt++) {
      try {
        for (const sub of ['members', 'done']) mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 });
        writeFileAtomic(join(dir, 'members', String(process.pid)), JSON.stringify(me), 0o600);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 2) throw err;
      }
    }
    const claim = join(dir, 'sampler');
    let tookOver: string | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        createComplete(claim, JSON.stringify(me));
        if (tookOver) notes.push(tookOver);
        return new NodeRanks(id, dir, 'sampler', me, notes);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = readClaim(claim);
      if (holder === 'gone') continue; // its sampler closed the election meanwhile
      if (holder !== undefined && processExists(holder.pid))
        return new NodeRanks(id, dir, 'contributor', holder, notes);
      try {
        renameSync(claim, join(dir, `sampler.dead-${holder?.pid ?? 'unreadable'}`));
        tookOver =
          holder === undefined
            ? `the node's sampler claim could not be read for ${CLAIM_READ_WAIT_MS} ms; this rank took over`
            : `the node's sampler rank ${holder.rank} (pid ${holder.pid}) had ended without closing; this rank took over`;
      } catch {
        // Another rank took it over first: try again.
      }
    }
    throw new Error(`cannot take part in the node's sampler election in ${dir}`);
  }

  /** A contributor's app has ended: its times, exit and regions for the sampler. */
  finish(record: Omit<DoneRecord, 'rank' | 'pid'>): void {
    writeFileAtomic(
      join(this.dir, 'done', String(this.pid)),
      JSON.stringify({ rank: this.id.rank, pid: this.pid, ...record }),
      0o600,
    );
    if (this.role === 'contributor' && !processExists(this.sampler.pid))
      this.notes.push(
        `the node's sampler rank ${this.sampler.rank} (pid ${this.sampler.pid}) ended before this rank finished: ` +
          "the node's energy after its end is not measured",
      );
  }

  /**
   * The sampler, after its own app: waits (the sampling goes on) until every other registered
   * rank is done or has died, closes the election, and returns the others' records. A rank
   * that registers while it waits is waited for too.
   */
  async waitForOthers(
    stop: () => boolean,
    everyMs = 20,
  ): Promise<{ done: DoneRecord[]; members: RankMember[] }> {
    const lost = new Set<number>();
    let closed = false;
    for (;;) {
      if (stop()) break;
      const pending = this.others().filter((m) => !this.isDone(m.pid) && !lost.has(m.pid));
      for (const m of pending) if (!processExists(m.pid)) lost.add(m.pid);
      if (pending.every((m) => lost.has(m.pid))) {
        if (closed) break;
        // New arrivals after this elect a sampler of their own; one that registered before is seen next.
        try {
          renameSync(join(this.dir, 'sampler'), join(this.dir, `sampler.closed-${this.pid}`));
        } catch (err) {
          this.notes.push(`could not close the node's election: ${errorMessage(err)}`);
        }
        closed = true;
        continue;
      }
      await sleep(everyMs);
    }
    const done: DoneRecord[] = [];
    const members: RankMember[] = [];
    const collected = this.others();
    for (const m of collected) {
      const record = readJson<DoneRecord>(join(this.dir, 'done', String(m.pid)));
      if (record) done.push(record);
      members.push({
        rank: m.rank,
        pid: m.pid,
        state: record ? 'finished' : lost.has(m.pid) ? 'ended without reporting (crashed?)' : 'still running',
        ...(record ? { exit: record.exit.status } : {}),
      });
    }
    if (closed) this.removeCollected(collected.map((m) => m.pid));
    return { done, members };
  }

  /**
   * The sampler, once it holds the others' records: removes their and its own files, and the
   * directories when nothing else is in them (a rank that arrived after the election closed keeps
   * them, and its own sampler removes them later). Nothing is left in the user's temp directory.
   */
  private removeCollected(pids: readonly number[]): void {
    for (const pid of [...pids, this.pid]) {
      for (const sub of ['members', 'done']) rmSync(join(this.dir, sub, String(pid)), { force: true });
    }
    // A rank that died while it wrote its claim leaves sampler.new-<pid> (createComplete).
    const leftBy = new Set([...pids, this.pid].map((pid) => `sampler.new-${pid}`));
    for (const name of this.entries(this.dir))
      if (name === `sampler.closed-${this.pid}` || name.startsWith('sampler.dead-') || leftBy.has(name))
        rmSync(join(this.dir, name), { force: true });
    for (const dir of [join(this.dir, 'members'), join(this.dir, 'done'), this.dir, dirname(this.dir)]) {
      try {
        rmdirSync(dir);
      } catch {
        return; // not empty (a later rank's files) or already gone: the rest stays for it
      }
    }
  }

  private entries(dir: string): string[] {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  }

  /** A report's account of the ranks, from this monitor's side. */
  info(members: RankMember[] = []): RanksInfo {
    const sampler = `rank ${this.sampler.rank} (pid ${this.sampler.pid})`;
    return {
      key: this.id.key,
      source: this.id.source,
      rank: this.id.rank,
      role: this.role,
      sampler: this.sampler,
      members,
      note:
        this.role === 'sampler'
          ? `this rank sampled the node for all ${members.length + 1} ranks of ${this.id.key} on it; ` +
            "the node's energy is counted once, here (the other ranks' reports have none)"
          : `the node is measured by ${sampler}, whose report counts its energy once; this report has no node energy`,
      notes: this.notes,
    };
  }

  private others(): { rank: string; pid: number }[] {
    let names: string[] = [];
    try {
      names = readdirSync(join(this.dir, 'members'));
    } catch {
      return [];
    }
    return names
      .filter((n) => n !== String(this.pid))
      .flatMap((n) => readJson<{ rank: string; pid: number }>(join(this.dir, 'members', n)) ?? []);
  }

  private isDone(pid: number): boolean {
    return readJson(join(this.dir, 'done', String(pid))) !== undefined;
  }
}
