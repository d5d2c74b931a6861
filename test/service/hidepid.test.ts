import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { procMountOptions } from '../../src/platform/proc-visibility.js';
import {
  needsDaemon,
  needsKernel,
  needsTool,
  needsToRun,
  requirements,
  whenMet,
} from '../helpers/requirements.js';
import { ensureGroup, ensureUser } from '../helpers/users.js';
import { ServiceHarness, STRICT_ANSWERS } from './harness.js';

// Where /proc is mounted with hidepid=, the kernel shows other users' processes only to holders
// of CAP_SYS_PTRACE or of the mount's gid= group, root included. joulegated identifies every
// caller from /proc, so the shipped unit must give it one of the two. Each daemon here runs in a
// mount namespace of its own with a fresh proc mounted there with hidepid (since Linux 5.8 every
// proc mount has its own options, so the host's /proc keeps its own), and with the capability
// bounding set of packaging/joulegated.service, applied by setpriv.

const UNIT = new URL('../../packaging/joulegated.service', import.meta.url).pathname;

/** The shipped unit's capability bounding set, in setpriv's spelling (sys_rawio, …). */
function unitCapabilities(): string[] {
  const line = /^CapabilityBoundingSet=(.+)$/m.exec(readFileSync(UNIT, 'utf8'));
  assert.ok(line, 'the unit sets CapabilityBoundingSet=');
  return line[1]!
    .trim()
    .split(/\s+/)
    .map((cap) => cap.replace(/^CAP_/, '').toLowerCase());
}

const skip = requirements(
  needsDaemon(),
  needsTool('unshare', 'mount', 'sh'),
  needsKernel(
    5,
    8,
    "mounts a proc with hidepid in a namespace; before 5.8 that changes the host's /proc too",
  ),
  needsToRun(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      'mount -t proc -o hidepid=invisible proc /proc',
    ],
    'a mount namespace with a /proc of its own',
  ),
  needsToRun(
    'setpriv',
    ['--bounding-set', bounding(unitCapabilities()), '--', 'true'],
    "the unit's capabilities",
  ),
);
const user = whenMet(skip, () => ensureUser('jgsvc_hidden'));
const viewers = whenMet(skip, () => ensureGroup('jgsvc_procview'));

/** setpriv's --bounding-set for exactly `caps`. */
function bounding(caps: readonly string[]): string {
  return ['-all', ...caps.map((cap) => `+${cap}`)].join(',');
}

/**
 * A wrapper for ServiceHarness.startDaemon: a new mount namespace whose /proc is a proc mounted
 * with `procOptions`, then setpriv with the capabilities `caps` only (and `groups` as the
 * supplementary groups, if given), then the daemon.
 */
function hiddenProc(procOptions: string, caps: readonly string[], groups: readonly number[] = []): string[] {
  return [
    ...['unshare', '--mount', '--propagation', 'private', '--'],
    ...['sh', '-c', 'mount -t proc -o "$1" proc /proc && shift && exec "$@"', 'sh', procOptions],
    ...['setpriv', '--inh-caps', '-all', '--bounding-set', bounding(caps)],
    ...(groups.length > 0 ? ['--groups', groups.join(',')] : []),
    '--',
  ];
}

const hostProc = () => procMountOptions(readFileSync('/proc/self/mountinfo', 'utf8'));

const READ_TIME = [
  { call: 'platformOpenSession' },
  { call: 'platformReadSignal', args: ['TIME', 0, 0] },
  { call: 'platformCloseSession' },
];

/**
 * A daemon started inside `wrapper`, with TIME readable by everyone (the list written before it
 * starts: a daemon that cannot see root's client would refuse it the call that grants it), and
 * /proc's options as the daemon sees them.
 */
async function daemonBehind(
  wrapper: string[],
): Promise<{ h: ServiceHarness; seen: ReturnType<typeof procMountOptions> }> {
  const h = new ServiceHarness(STRICT_ANSWERS);
  await h.setup();
  const lists = join(h.configDir, '0.DEFAULT_ACCESS');
  mkdirSync(lists, { recursive: true, mode: 0o700 });
  writeFileSync(join(lists, 'allowed_signals'), 'TIME\n', { mode: 0o600 });
  const daemon = await h.startDaemon({}, wrapper);
  const seen = procMountOptions(readFileSync(`/proc/${daemon.pid}/mountinfo`, 'utf8'));
  return { h, seen };
}

const withoutPtrace = () => unitCapabilities().filter((cap) => cap !== 'sys_ptrace');

test("with the unit's capabilities, a daemon under hidepid=invisible,gid= serves other users", {
  skip,
}, async () => {
  const before = hostProc();
  const { h, seen } = await daemonBehind(hiddenProc(`hidepid=invisible,gid=${viewers}`, unitCapabilities()));
  assert.deepEqual(seen, { hidepid: 'invisible', gid: viewers }, 'the daemon runs with the hiding /proc');
  assert.deepEqual(hostProc(), before, "the host's /proc keeps its options");
  assert.doesNotMatch(h.daemonLog, /warning: \/proc/);

  const [opened, read, closed] = await h.client(READ_TIME, { user });
  assert.equal(opened?.ok, true, JSON.stringify(opened));
  assert.equal(read?.ok, true, JSON.stringify(read));
  assert.equal(typeof read?.value, 'number');
  assert.ok(Number.isFinite(read?.value as number), `TIME read ${String(read?.value)}`);
  assert.equal(closed?.ok, true, JSON.stringify(closed));
  // And root's, whose capabilities are more than the daemon's.
  const [asRoot] = await h.client(READ_TIME);
  assert.equal(asRoot?.ok, true, JSON.stringify(asRoot));
  await h.stopDaemon();
});

for (const hidepid of ['invisible', 'noaccess']) {
  test(`without CAP_SYS_PTRACE or the group, under hidepid=${hidepid} the daemon says so at start and refuses every caller as hidden`, {
    skip,
  }, async () => {
    const { h, seen } = await daemonBehind(hiddenProc(`hidepid=${hidepid},gid=${viewers}`, withoutPtrace()));
    assert.deepEqual(seen, { hidepid, gid: viewers });
    const why = `/proc is mounted with hidepid=${hidepid},gid=${viewers}, which shows another user's process, or one with capabilities joulegated lacks, only to group ${viewers} and to holders of CAP_SYS_PTRACE, and joulegated has neither`;
    assert.ok(
      h.daemonLog.includes(`joulegated: warning: ${why}: it cannot identify those callers and refuses them`),
      h.daemonLog,
    );
    const refusal = `that opened this connection is hidden from joulegated: ${why}; a session needs a process joulegated can see`;
    const [opened] = await h.client(READ_TIME.slice(0, 1), { user });
    assert.equal(opened?.ok, false, JSON.stringify(opened));
    assert.match(opened?.message ?? '', /^Process \d+ /);
    assert.ok(opened?.message?.endsWith(refusal), opened?.message);
    // Root's too: the kernel shows a process with capabilities the daemon lacks only to a holder
    // of CAP_SYS_PTRACE (or the group), and a root client holds them all.
    const [asRoot] = await h.client(READ_TIME.slice(0, 1));
    assert.equal(asRoot?.ok, false, JSON.stringify(asRoot));
    assert.ok(asRoot?.message?.endsWith(refusal), asRoot?.message);
    await h.stopDaemon();
  });
}

test("the mount's group serves in place of CAP_SYS_PTRACE, root's group when gid= is not given", {
  skip,
}, async () => {
  for (const [options, groups] of [
    [`hidepid=invisible,gid=${viewers}`, [viewers]],
    ['hidepid=invisible', []],
  ] as const) {
    const { h } = await daemonBehind(hiddenProc(options, withoutPtrace(), groups));
    assert.doesNotMatch(h.daemonLog, /warning: \/proc/, options);
    const [opened, read] = await h.client(READ_TIME, { user });
    assert.equal(opened?.ok, true, `${options}: ${JSON.stringify(opened)}`);
    assert.equal(read?.ok, true, `${options}: ${JSON.stringify(read)}`);
    await h.stopDaemon();
  }
});

test('hidepid=ptraceable asks for CAP_SYS_PTRACE whatever the group', { skip }, async () => {
  const served = await daemonBehind(hiddenProc('hidepid=ptraceable', unitCapabilities()));
  assert.equal((await served.h.client(READ_TIME, { user }))[1]?.ok, true);
  await served.h.stopDaemon();

  const refused = await daemonBehind(hiddenProc('hidepid=ptraceable', withoutPtrace()));
  assert.match(refused.h.daemonLog, /warning: \/proc is mounted with hidepid=ptraceable/);
  const [opened] = await refused.h.client(READ_TIME.slice(0, 1), { user });
  assert.equal(opened?.ok, false, JSON.stringify(opened));
  assert.match(opened?.message ?? '', /is hidden from joulegated: \/proc is mounted with hidepid=ptraceable/);
  await refused.h.stopDaemon();
});
