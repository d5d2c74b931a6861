import { readFileSync } from 'node:fs';
import { type ProcessIdentity, startTimeSeconds } from '../platform/process.js';
import type { AccessSet } from './access/index.js';
import type { Caller } from './caller-access.js';
import type { ProfileRegistry } from './profiles.js';
import type { Log } from './secure-files.js';
import type { SessionRecord, SessionStore } from './sessions.js';

/** A new session record (one reference) for a process and the access lists it gets. */
export function newSessionRecord(process: ProcessIdentity, lists: AccessSet): SessionRecord {
  return {
    client_pid: process.pid,
    client_uid: process.uid,
    client_gid: process.gid,
    create_time: startTimeSeconds(process.startTicks),
    start_ticks: process.startTicks,
    signals: lists.signals,
    controls: lists.controls,
    reference_count: 1,
  };
}

/**
 * Whether `rec` is the session of `caller`'s process: same uid and start time (both pinned when
 * the caller's connection first called, so nothing is read). Whether that process still runs is
 * the liveness poller's question, and asked again before state changes.
 */
export function belongsTo(rec: SessionRecord, caller: Caller): boolean {
  return rec.client_uid === caller.uid && rec.start_ticks === caller.startTicks;
}

/**
 * Kills a batch server left by an earlier daemon, if that pid still runs the batch server entry
 * (the check keeps a recycled pid of an unrelated process safe).
 */
function killOrphanBatchServer(pid: number): boolean {
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return false;
  }
  if (!/app\/batch-server\.(c?js|ts)\0/.test(cmdline)) return false;
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

/**
 * Takes over the sessions an earlier daemon left in the run dir (SessionStore.load drops dead
 * and recycled pids): ends their batch servers and registers their profiles again.
 */
export function recoverSessions(sessions: SessionStore, profiles: ProfileRegistry, log: Log): void {
  for (const rec of sessions.load()) {
    if (rec.batch_server !== undefined) {
      // A batch server belongs to the daemon instance that started it; an orphan left by a
      // crash would go on serving (and writing) unwatched, so it is ended (GEOPM: SIGKILL).
      const killed = killOrphanBatchServer(rec.batch_server);
      log(
        `joulegated: session of pid ${rec.client_pid}: batch server ${rec.batch_server} ${killed ? 'killed' : 'gone'} after the restart`,
      );
      delete rec.batch_server;
      sessions.put(rec);
    }
    if (rec.profile_name) profiles.add(rec.profile_name, rec.client_pid);
    log(`joulegated: kept session of pid ${rec.client_pid} from an earlier run`);
  }
}
