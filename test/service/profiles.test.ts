import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LIMITS } from '../../src/service/limits.js';
import { ProfileRegistry } from '../../src/service/profiles.js';
import { tempDir } from '../helpers/tmp.js';

// What flooding clients can make the daemon keep: region names reported at PlatformStopProfile,
// counted in names and bytes (not RSS), per uid and for all users.
const names = (tag: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${tag}-${i}-`.padEnd(LIMITS.regionNameBytes, 'x'));

/** Rounds of one pid of `uid` profiling, then stopping with the most names a call may carry. */
function flood(registry: ProfileRegistry, uid: number, rounds: number): number {
  let refused = 0;
  for (let round = 0; round < rounds; round++) {
    const profile = `flood-${uid}-${round}`;
    registry.add(profile, 1000 + uid);
    try {
      registry.stop(profile, 1000 + uid, uid, names(`${uid}.${round}`, LIMITS.regionsPerCall));
    } catch (err) {
      assert.match(String(err), /over the cap of \d+ bytes (per user|\()/);
      refused++;
      registry.forget(1000 + uid, profile);
    }
  }
  return refused;
}

test('one flooding uid keeps at most its byte cap of region names', () => {
  const registry = new ProfileRegistry(tempDir('jg-profiles-'), () => {});
  const refused = flood(registry, 7, 20);
  assert.ok(refused >= 18, `${refused} of 20 refused`);
  assert.ok(registry.keptBytes(7) <= LIMITS.regionBytesPerUser, String(registry.keptBytes(7)));
  assert.ok(registry.keptNames <= LIMITS.regionBytesPerUser / LIMITS.regionNameBytes);
  assert.ok(registry.keptNames >= LIMITS.regionsPerCall, 'a report within the cap is kept');
});

test('many flooding uids keep at most the total cap, each at most its own', () => {
  const registry = new ProfileRegistry(tempDir('jg-profiles-'), () => {});
  const uids = Array.from(
    { length: 2 * (LIMITS.regionBytesTotal / LIMITS.regionBytesPerUser) },
    (_, i) => 100 + i,
  );
  for (const uid of uids) flood(registry, uid, 5);
  assert.ok(registry.keptBytes() <= LIMITS.regionBytesTotal, String(registry.keptBytes()));
  for (const uid of uids) assert.ok(registry.keptBytes(uid) <= LIMITS.regionBytesPerUser);
  assert.ok(registry.keptNames <= LIMITS.regionBytesTotal / LIMITS.regionNameBytes);
  // The total is reached: the last uids got nothing kept.
  assert.equal(registry.keptBytes(uids.at(-1)!), 0);
});

test('collecting a profile gives its bytes back to the uids charged', () => {
  const dir = tempDir('jg-profiles-');
  const registry = new ProfileRegistry(dir, () => {});
  flood(registry, 7, 1);
  assert.ok(registry.keptBytes(7) > 0);
  registry.pidsOf('flood-7-0', process.pid); // takes PROFILER_LOCK for this process
  assert.equal(registry.popRegions('flood-7-0', process.pid).length, LIMITS.regionsPerCall);
  assert.equal(registry.keptBytes(7), 0);
  assert.equal(registry.keptBytes(), 0);
  assert.equal(registry.keptNames, 0);
});
