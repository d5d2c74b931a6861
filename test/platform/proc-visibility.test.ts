import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { procHidesOthers, procMountOptions, type Viewer } from '../../src/platform/proc-visibility.js';
import { captureSysroot } from '../helpers/captures.js';

// /proc/self/mountinfo lines as Linux prints them: this machine's (6.18, names since 5.8) with a
// hidepid mount over the first, and the numeric form of older kernels.
const HOST = '22 27 0:21 / /proc rw,relatime - proc proc rw\n';
const OVER = `${HOST}66 48 0:40 / /proc rw,relatime - proc proc rw,gid=4242,hidepid=invisible\n`;
const OLD = '17 21 0:4 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw,hidepid=2\n';

const CAP_SYS_PTRACE = 1n << 19n;
const root: Viewer = { capEff: 0x1ffffffffffn, groups: [0] };
const rootWithout: Viewer = { capEff: 0x1ffffffffffn & ~CAP_SYS_PTRACE, groups: [0] };

test('a real mountinfo with a plain /proc (prometheus/procfs capture) hides nothing', () => {
  const sysroot = captureSysroot('procfs');
  const text = readFileSync(join(sysroot, 'proc/26231/mountinfo'), 'utf8');
  const options = procMountOptions(text);
  // procfs' fixture: "17 21 0:4 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw"
  assert.deepEqual(options, { hidepid: 'off' });
  assert.equal(procHidesOthers(options, rootWithout, 'joulegated'), undefined);
});

test('the last proc mount at /proc is the one in use, its hidepid named or numbered', () => {
  assert.deepEqual(procMountOptions(HOST), { hidepid: 'off' });
  assert.deepEqual(procMountOptions(OVER), { hidepid: 'invisible', gid: 4242 });
  assert.deepEqual(procMountOptions(OLD), { hidepid: 'invisible' });
  for (const [n, name] of [
    ['0', 'off'],
    ['1', 'noaccess'],
    ['4', 'ptraceable'],
  ]) {
    assert.equal(procMountOptions(OLD.replace('hidepid=2', `hidepid=${n}`))?.hidepid, name);
  }
  // Where a moved mount breaks the order, /proc's device names the mount in use.
  assert.deepEqual(procMountOptions(OVER, '0:21'), { hidepid: 'off' });
  assert.deepEqual(procMountOptions(OVER, '0:40'), { hidepid: 'invisible', gid: 4242 });
  assert.deepEqual(procMountOptions(OVER, '0:99'), { hidepid: 'invisible', gid: 4242 });
  // A value this code does not know is kept (and taken as hiding); no prototype key passes.
  assert.equal(procMountOptions(OLD.replace('hidepid=2', 'hidepid=constructor'))?.hidepid, 'constructor');
  // Something other than proc mounted over /proc, and no /proc at all.
  assert.equal(procMountOptions(`${OVER}70 66 0:50 / /proc rw - tmpfs tmpfs rw\n`), undefined);
  assert.equal(procMountOptions('21 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n'), undefined);
});

test('hidepid hides other users from a viewer outside the mount group and without CAP_SYS_PTRACE', () => {
  const options = procMountOptions(OVER);
  const user: Viewer = { capEff: 0n, groups: [1000] };
  assert.equal(procHidesOthers(options, root, 'joulegated'), undefined);
  assert.equal(procHidesOthers(options, { ...rootWithout, groups: [0, 4242] }, 'joulegated'), undefined);
  assert.equal(
    procHidesOthers(options, rootWithout, 'joulegated'),
    "/proc is mounted with hidepid=invisible,gid=4242, which shows another user's process, or one with capabilities joulegated lacks, only to group 4242 and to holders of CAP_SYS_PTRACE, and joulegated has neither",
  );
  // Without gid= the group is root's (0): root's group sees everything, another viewer does not.
  const noGroup = procMountOptions(OLD.replace('hidepid=2', 'hidepid=1'));
  assert.equal(procHidesOthers(noGroup, rootWithout, 'joulegated'), undefined);
  assert.equal(
    procHidesOthers(noGroup, user, 'a user'),
    "/proc is mounted with hidepid=noaccess, which shows another user's process, or one with capabilities a user lacks, only to group 0 and to holders of CAP_SYS_PTRACE, and a user has neither",
  );
  // ptraceable asks for the right to ptrace alone: no group stands in for it.
  const ptraceable = procMountOptions(OLD.replace('hidepid=2', 'hidepid=4'));
  assert.equal(procHidesOthers(ptraceable, root, 'joulegated'), undefined);
  assert.equal(
    procHidesOthers(ptraceable, rootWithout, 'joulegated'),
    "/proc is mounted with hidepid=ptraceable, which shows another user's process, or one with capabilities joulegated lacks, only to holders of CAP_SYS_PTRACE, and joulegated lacks it",
  );
  assert.equal(procHidesOthers(procMountOptions(HOST), user, 'a user'), undefined);
  assert.equal(
    procHidesOthers(procMountOptions(OLD.replace('hidepid=2', 'hidepid=8')), user, 'a user'),
    "/proc is mounted with hidepid=8 (not known here), which shows another user's process, or one with capabilities a user lacks, only to group 0 and to holders of CAP_SYS_PTRACE, and a user has neither",
  );
});
