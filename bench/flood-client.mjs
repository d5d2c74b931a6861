// One flooding client of bench/flood.ts (plain JS over dist/, run as an unprivileged user):
// rounds of calls at the per-call caps, each name unique and as long as allowed. Env: the bus
// address. Args: rounds, tag. Prints {"refused":{method:count}} when done.
import { GeopmClient } from '../dist/ipc/geopm-client.js';
import { LIMITS } from '../dist/service/limits.js';

const [rounds, tag] = [Number(process.argv[2]), process.argv[3]];
const kinds = (process.env.FLOOD_KINDS ?? 'info,batch,profile').split(',');
const name = (prefix, i, bytes) => `${tag}-${prefix}-${i}-`.padEnd(bytes, 'x');
const refused = {};
const count = (what, call) =>
  call.then(
    () => {},
    () => {
      refused[what] = (refused[what] ?? 0) + 1;
    },
  );
const client = await GeopmClient.connect();
await client.platformOpenSession();
for (let round = 0; round < rounds; round++) {
  const names = Array.from({ length: LIMITS.namesPerCall }, (_, i) => name(`s${round}`, i, LIMITS.nameBytes));
  if (kinds.includes('info')) await count('PlatformGetSignalInfo', client.platformGetSignalInfo(names));
  const requests = names.map((n) => ({ name: n, domain: 0, idx: 0 }));
  if (kinds.includes('batch')) await count('PlatformStartBatch', client.platformStartBatch(requests, []));
  const regions = Array.from({ length: LIMITS.regionsPerCall }, (_, i) =>
    name(`r${round}`, i, LIMITS.regionNameBytes),
  );
  if (!kinds.includes('profile')) continue;
  await count('PlatformStartProfile', client.platformStartProfile(`${tag}-flood-${round}`));
  await count('PlatformStopProfile', client.platformStopProfile(regions));
  // A refused stop (the uid's kept names are at their cap) leaves the profile started.
  await client.platformStopProfile([]).catch(() => {});
}
await client.platformCloseSession();
client.close();
process.stdout.write(`${JSON.stringify({ refused })}\n`);
