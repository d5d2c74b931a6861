import { readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../platform/errors.js';
import { isSameProcess, type ProcessIdentity } from '../platform/process.js';
import * as z from '../platform/validation.js';
import { type Log, quarantine, secureReadFile, secureWriteRecord } from './secure-files.js';

/**
 * One client session: GEOPM's active_sessions schema fields plus `start_ticks` (field 22 of
 * /proc/<pid>/stat at open), which pins the record to one process so a recycled pid can never
 * inherit it.
 */
const count = () => z.int().check(z.nonnegative());
export const SessionSchema = z.strictObject({
  client_pid: z.int().check(z.positive()),
  client_uid: count(),
  client_gid: count(),
  create_time: z.number().check(z.nonnegative()),
  start_ticks: count(),
  signals: z.array(z.string()),
  controls: z.array(z.string()),
  reference_count: z.optional(count()),
  watch_id: z.optional(z.int()),
  batch_server: z.optional(z.int()),
  profile_name: z.optional(z.string()),
});

export type SessionRecord = z.infer<typeof SessionSchema>;

export function sessionFile(runDir: string, pid: number): string {
  return join(runDir, `session-${pid}.json`);
}

export function identityOf(rec: SessionRecord): ProcessIdentity {
  return { pid: rec.client_pid, uid: rec.client_uid, gid: rec.client_gid, startTicks: rec.start_ticks };
}

/**
 * Session records in memory, mirrored to `session-<pid>.json` (0600, atomic) so a restarted
 * daemon keeps its clients. A file is written just after the change that makes it (in a
 * microtask, on the event loop: see secureWriteRecord for why not on the thread pool), one
 * write at a time per pid, each taking the record as it is then, so changes made meanwhile are
 * written together.
 */
export class SessionStore {
  private readonly sessions = new Map<number, SessionRecord>();
  /** Per pid: the last write (or removal) of its file queued, until it is done. */
  private readonly writes = new Map<number, Promise<void>>();
  /** Pids whose queued write has not begun yet (it will take the newest record). */
  private readonly queued = new Set<number>();

  constructor(
    private readonly runDir: string,
    private readonly log: Log,
  ) {}

  get(pid: number): SessionRecord | undefined {
    return this.sessions.get(pid);
  }

  all(): SessionRecord[] {
    return [...this.sessions.values()];
  }

  /** Keeps `rec` (changed in place or new) and queues the write of its file. */
  put(rec: SessionRecord): void {
    this.sessions.set(rec.client_pid, rec);
    this.mirror(rec.client_pid);
  }

  /** Forgets the session of `pid` and queues the removal of its file. */
  remove(pid: number): void {
    this.sessions.delete(pid);
    this.mirror(pid);
  }

  /** Resolves once the file of `pid` says what memory said when this was called. */
  async settled(pid: number): Promise<void> {
    await this.writes.get(pid);
  }

  /** Resolves once every file says what memory said when this was called. */
  async flushed(): Promise<void> {
    await Promise.all(this.writes.values());
  }

  private mirror(pid: number): void {
    if (this.queued.has(pid)) return;
    this.queued.add(pid);
    const write = (this.writes.get(pid) ?? Promise.resolve()).then(() => this.writeFile(pid));
    this.writes.set(pid, write);
    void write.then(() => {
      if (this.writes.get(pid) === write) this.writes.delete(pid);
    });
  }

  /** Writes (or removes) the file of `pid` as memory has it now; a failure is logged. */
  private writeFile(pid: number): void {
    this.queued.delete(pid);
    const rec = this.sessions.get(pid);
    const path = sessionFile(this.runDir, pid);
    try {
      if (rec) secureWriteRecord(path, `${JSON.stringify(rec)}\n`);
      else unlinkSync(path);
    } catch (err) {
      if (!rec && (err as NodeJS.ErrnoException).code === 'ENOENT') return;
      this.log(`joulegated: cannot ${rec ? 'write' : 'remove'} ${path}: ${errorMessage(err)}`);
    }
  }

  /**
   * Reads every session file left by an earlier daemon. Untrusted or invalid files are
   * quarantined; records of dead processes, or of a pid now used by another process (start
   * time, uid or gid differ), are dropped with a log line. Returns the records kept.
   */
  load(): SessionRecord[] {
    for (const name of readdirSync(this.runDir).sort()) {
      const m = /^session-(\d+)\.json$/.exec(name);
      if (!m) continue;
      const path = join(this.runDir, name);
      const text = secureReadFile(path, { log: this.log });
      if (text === undefined) continue;
      let rec: SessionRecord;
      try {
        rec = SessionSchema.parse(JSON.parse(text));
        if (rec.client_pid !== Number(m[1]))
          throw new Error(`client_pid ${rec.client_pid} does not match file name`);
      } catch (err) {
        quarantine(path, `is not a valid session record (${firstLine(err)})`, this.log);
        continue;
      }
      if (!isSameProcess(identityOf(rec))) {
        this.log(`joulegated: dropping session of pid ${rec.client_pid}: process gone or pid reused`);
        unlinkSync(path);
        continue;
      }
      this.sessions.set(rec.client_pid, rec);
    }
    return this.all();
  }
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0]!.slice(0, 200);
}
