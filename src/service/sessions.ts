import { readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { isSameProcess, type ProcessIdentity } from '../platform/process.js';
import * as z from '../platform/validation.js';
import { type Log, quarantine, secureMakeFile, secureReadFile } from './secure-files.js';

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
 * daemon keeps its clients.
 */
export class SessionStore {
  private readonly sessions = new Map<number, SessionRecord>();

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

  put(rec: SessionRecord): void {
    this.sessions.set(rec.client_pid, rec);
    secureMakeFile(sessionFile(this.runDir, rec.client_pid), `${JSON.stringify(rec)}\n`);
  }

  remove(pid: number): void {
    this.sessions.delete(pid);
    try {
      unlinkSync(sessionFile(this.runDir, pid));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
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
