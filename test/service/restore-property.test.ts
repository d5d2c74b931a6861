import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { loadPlugins } from '../../src/backends/plugins.js';
import { ERROR_NAMES } from '../../src/ipc/dbus/interface.js';
import { errorMessage } from '../../src/platform/errors.js';
import { processIdentity } from '../../src/platform/process.js';
import { AccessLists } from '../../src/service/access/index.js';
import type { Caller } from '../../src/service/caller-access.js';
import { NoSessionError, WriteLockedError } from '../../src/service/errors.js';
import { GeopmService } from '../../src/service/service.js';
import { seededRandom as prng } from '../helpers/random.js';
import { needsDaemon, whenMet } from '../helpers/requirements.js';
import { tempDir } from '../helpers/tmp.js';
import { ensureUser } from '../helpers/users.js';
import { INITIAL_CONTROLS, ServiceHarness, type StepResult, waitFor } from './harness.js';

const skip = needsDaemon();

/** One step of test/service/client-script.mjs. */
type ClientStep =
  | { pid: boolean }
  | { call: string; args?: (string | number)[] }
  | { together: { call: string; args?: (string | number)[] }[] }
  | { sleep: number };

// The restore guarantee as a property: whatever order sessions are opened and closed, controls
// written and restored, and their processes exit or are killed, once every writer is gone no
// control differs from its saved value and write mode is free.
//   - In-process: the real service (method table, session manager, control lock, files) with
//     real client processes (sleep, or a shell leading a sleep) and random schedules of calls
//     that are sent without waiting, interleaved with exits, kills and the liveness poller.
//   - Over D-Bus: the daemon as a process, client processes that send calls back to back and
//     are killed (SIGKILL) or exit at random moments.
// JG_PROPERTY_RUNS / JG_PROPERTY_PROCESS_RUNS change the run counts; JG_PROPERTY_SEED the seed.

const RUNS = Number(process.env.JG_PROPERTY_RUNS ?? 1000);
const PROCESS_RUNS = Number(process.env.JG_PROPERTY_PROCESS_RUNS ?? 50);
const SEED = Number(process.env.JG_PROPERTY_SEED ?? 20261213);

const h = new ServiceHarness();
await whenMet(skip, () => h.setup());

/** Every control as it was saved: the initial fixture values. */
function controlsOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const file of Object.keys(INITIAL_CONTROLS)) out[file] = readFileSync(join(dir, file), 'utf8').trim();
  return out;
}

/** Pid in CONTROL_LOCK, '' when write mode is free. */
function lockHolder(runDir: string): string {
  const path = join(runDir, 'CONTROL_LOCK');
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : '';
}

/** Sends a signal to a process that may have exited already. */
function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

const sessionFiles = (runDir: string) => readdirSync(runDir).filter((f) => f.startsWith('session-'));

const spawned: ChildProcess[] = [];
after(() => {
  for (const p of spawned) if (p.exitCode === null) p.kill('SIGKILL');
});

/** A client process: a sleep that leads its own Unix session, or one led by a shell. */
interface ClientProcess {
  caller: Caller;
  /** The process the caller is, then its session leader if that is another process. */
  pids: number[];
}

async function startClient(ledByShell: boolean): Promise<ClientProcess> {
  const proc = ledByShell
    ? spawn('sh', ['-c', 'sleep 1000 & wait'], { detached: true, stdio: 'ignore' })
    : spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' });
  spawned.push(proc);
  let pid = proc.pid!;
  const pids = [pid];
  if (ledByShell) {
    const childrenFile = `/proc/${pid}/task/${pid}/children`;
    await waitFor(() => readFileSync(childrenFile, 'utf8').trim() !== '', 5000);
    pid = Number(readFileSync(childrenFile, 'utf8').trim().split(' ')[0]);
    pids.unshift(pid);
  }
  const ident = processIdentity(pid)!;
  return { caller: { pid, uid: ident.uid, startTicks: ident.startTicks }, pids };
}

/** How often each step of an in-process schedule is chosen: calls, process ends, waits. */
const ACTION_WEIGHTS: Record<string, number> = {
  open: 1,
  close: 1,
  closeOwn: 0.5,
  write: 2,
  writeBoard: 1,
  restore: 1,
  read: 1,
  exit: 0.4,
  kill: 0.4,
  killLeader: 0.3,
  settle: 1,
  pause: 1,
};

test(`in-process: ${RUNS} random schedules leave every control restored and write mode free`, {
  skip,
}, async () => {
  const dir = tempDir('jg-prop-');
  const runDir = join(dir, 'run');
  const controlDir = join(dir, 'controls');
  mkdirSync(runDir, { mode: 0o711 });
  mkdirSync(controlDir);
  for (const [file, value] of Object.entries(INITIAL_CONTROLS))
    writeFileSync(join(controlDir, file), `${value}\n`);
  process.env.JOULEGATE_TEST_CONTROL_DIR = controlDir;
  process.env.JOULEGATE_SYSROOT = h.sysroot;
  const plugins = await loadPlugins([h.pluginDir], () => {});
  const pio = await loadPlatform({ extra: plugins.backends });
  const log: string[] = [];
  const service = new GeopmService({
    runDir,
    pio,
    access: new AccessLists({ configDir: join(dir, 'config'), log: () => {} }),
    log: (line) => {
      log.push(line);
      if (log.length > 400) log.splice(0, 200);
    },
    pollMs: 5,
  });
  await service.start();
  const m = service.handlers;
  const saved = controlsOf(controlDir);
  const rnd = prng(SEED);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const totalWeight = Object.values(ACTION_WEIGHTS).reduce((a, b) => a + b, 0);
  const weighted = (weights: Record<string, number>): string => {
    let x = rnd() * totalWeight;
    for (const [action, w] of Object.entries(weights)) {
      x -= w;
      if (x < 0) return action;
    }
    return 'settle';
  };
  const unexpected: string[] = [];
  const counts: Record<string, number> = {};
  const refusals: Record<string, number> = {};
  let writesApplied = 0;

  for (let run = 0; run < RUNS; run++) {
    const clients = await Promise.all(
      Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => startClient(rnd() < 0.3)),
    );
    const pending: Promise<unknown>[] = [];
    const refusedOrFailed = (action: string) => (err: unknown) => {
      // Refusals are expected; anything else is a defect.
      if (!(err instanceof NoSessionError || err instanceof WriteLockedError)) {
        unexpected.push(`run ${run} ${action}: ${errorMessage(err)}`);
      }
      const why = `${action}: ${errorMessage(err).replace(/\d+/g, 'N').slice(0, 90)}`;
      refusals[why] = (refusals[why] ?? 0) + 1;
    };
    // Every client opens a session first; half the schedules race that open.
    for (const c of clients) pending.push(m.PlatformOpenSession(c.caller, []).catch(refusedOrFailed('open')));
    if (rnd() < 0.5) await Promise.allSettled(pending);
    const calls: Record<string, (c: Caller) => Promise<unknown>> = {
      open: (c) => m.PlatformOpenSession(c, []),
      close: (c) => m.PlatformCloseSession(c, []),
      closeOwn: (c) => m.PlatformCloseSessionAdmin(c, [c.pid]),
      write: (c) =>
        m
          .PlatformWriteControl(c, ['FILECTL::LIMIT', 1, Math.floor(rnd() * 2), 1 + Math.floor(rnd() * 99)])
          .then(() => writesApplied++),
      writeBoard: (c) => m.PlatformWriteControl(c, ['FILECTL::MODE', 0, 0, 7]),
      restore: (c) => m.PlatformRestoreControl(c, []),
      read: (c) => m.PlatformReadSignal(c, ['FILECTL::LIMIT', 1, 0]),
    };
    const steps = 4 + Math.floor(rnd() * 12);
    for (let step = 0; step < steps; step++) {
      const client = pick(clients);
      const action = weighted(ACTION_WEIGHTS);
      counts[action] = (counts[action] ?? 0) + 1;
      if (action === 'exit') signal(client.caller.pid, 'SIGTERM');
      else if (action === 'kill') signal(client.caller.pid, 'SIGKILL');
      else if (action === 'killLeader') signal(client.pids.at(-1)!, 'SIGKILL');
      else if (action === 'settle') await Promise.allSettled(pending);
      else if (action === 'pause') await new Promise((r) => setTimeout(r, Math.floor(rnd() * 8)));
      else {
        pending.push(calls[action]!(client.caller).catch(refusedOrFailed(action)));
      }
    }
    await Promise.allSettled(pending);
    for (const c of clients) for (const pid of c.pids) signal(pid, 'SIGKILL');
    const settled = await waitFor(
      () => lockHolder(runDir) === '' && sessionFiles(runDir).length === 0,
      5000,
      2,
    );
    assert.ok(
      settled,
      `run ${run}: write mode held by "${lockHolder(runDir)}", sessions ${sessionFiles(runDir).join(' ')} after every client is gone\n${log.slice(-20).join('\n')}`,
    );
    assert.deepEqual(
      controlsOf(controlDir),
      saved,
      `run ${run}: controls not restored\n${log.slice(-20).join('\n')}`,
    );
  }
  await service.shutdown();
  assert.deepEqual(unexpected, []);
  console.log(`refusals: ${JSON.stringify(refusals)}`);
  console.log(
    `in-process property: ${RUNS} runs (seed ${SEED}), ${writesApplied} writes applied, actions ${JSON.stringify(counts)}`,
  );
  // The schedules did exercise write mode.
  assert.ok(writesApplied > RUNS / 4, `only ${writesApplied} writes were applied`);
});

test(`over D-Bus: ${PROCESS_RUNS} runs of client processes killed (SIGKILL) or exiting at random moments`, {
  skip,
}, async () => {
  await h.startDaemon();
  const user = ensureUser('jgsvc_property');
  await h.client([{ call: 'platformSetGroupAccess', args: ['', ['FILECTL::LIMIT'], ['FILECTL::LIMIT']] }]);
  const rnd = prng(SEED + 1);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const write = () => ({
    call: 'platformWriteControl',
    args: ['FILECTL::LIMIT', 1, 0, 1 + Math.floor(rnd() * 99)],
  });
  const stepChoices: (() => ClientStep)[] = [
    () => ({ call: 'platformOpenSession' }),
    () => ({ call: 'platformCloseSession' }),
    write,
    () => ({ call: 'platformRestoreControl' }),
    () => ({ together: [{ call: 'platformCloseSession' }, write()] }),
    () => ({ together: [{ call: 'platformRestoreControl' }, { call: 'platformCloseSession' }] }),
    () => ({ sleep: 1 + Math.floor(rnd() * 60) }),
    () => ({ sleep: 1 + Math.floor(rnd() * 60) }),
  ];
  let killed = 0;
  for (let run = 0; run < PROCESS_RUNS; run++) {
    const runs = Array.from({ length: 1 + Math.floor(rnd() * 3) }, async () => {
      const steps: ClientStep[] = [{ pid: true }, { call: 'platformOpenSession' }];
      for (let i = 0; i < 2 + Math.floor(rnd() * 6); i++) steps.push(pick(stepChoices)());
      const killAfterMs = rnd() < 0.7 ? Math.floor(rnd() * 120) : undefined;
      // A client picked for a kill lingers at the end, so the kill lands (mid-steps or after
      // them) instead of missing a client that already finished.
      if (killAfterMs !== undefined) steps.push({ sleep: 400 });
      const proc = h.startClient(steps, {
        user,
        ...(rnd() < 0.3 ? { leaderShell: true } : { setsid: true }),
      });
      proc.stdin!.end();
      proc.stderr!.resume();
      let out = '';
      proc.stdout!.setEncoding('utf8');
      proc.stdout!.on('data', (d: string) => {
        out += d;
      });
      const exited = new Promise<void>((r) => proc.on('close', () => r()));
      if (killAfterMs !== undefined) {
        await waitFor(() => out.includes('\n'), 10_000);
        const pid = (JSON.parse(out.split('\n')[0]!) as StepResult).value as number;
        await new Promise((r) => setTimeout(r, killAfterMs));
        if (signal(pid, 'SIGKILL')) killed++;
      }
      await exited;
      const results = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as StepResult);
      for (const r of results) {
        if (r.ok || r.name === undefined) continue;
        assert.ok(
          r.name === ERROR_NAMES.NoSession || r.name === ERROR_NAMES.WriteLocked,
          `run ${run}: unexpected error ${r.name}: ${r.message}`,
        );
      }
    });
    await Promise.all(runs);
    const settled = await waitFor(
      () => lockHolder(h.runDir) === '' && sessionFiles(h.runDir).length === 0,
      5000,
    );
    assert.ok(
      settled,
      `run ${run}: CONTROL_LOCK "${lockHolder(h.runDir)}", sessions ${sessionFiles(h.runDir)}`,
    );
    assert.deepEqual(controlsOf(h.controlDir), INITIAL_CONTROLS, `run ${run}: controls not restored`);
  }
  console.log(`over D-Bus: ${PROCESS_RUNS} runs, ${killed} clients killed with SIGKILL mid-run`);
  assert.ok(killed >= PROCESS_RUNS / 2, `only ${killed} kills`);
});
