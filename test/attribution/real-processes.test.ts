import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openConsumer } from '../../src/attribution/consumers.js';
import type { DeviceRef, MeasuredShares } from '../../src/attribution/engine.js';
import { attributeReadings, type NodeReading, readNodeCpuTimes } from '../../src/attribution/interval.js';
import { kernelClockTicks } from '../../src/attribution/kernel-files.js';
import { DomainType } from '../../src/platform/domains.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { loadTopology } from '../../src/platform/topology.js';
import { waitFor } from '../service/harness.js';

// Real processes on this machine, read through the consumer readers at sysroot "/". Only the
// energy is synthetic (a fixed ΔE per package and interval): CI machines have no readable RAPL.
const started: ChildProcess[] = [];
after(() => {
  // Each child leads its own process group: killing the group ends the loop's subshell too.
  for (const child of started) if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
});

function start(command: string, args: string[]): number {
  const child = spawn(command, args, { stdio: 'ignore', detached: true });
  started.push(child);
  assert.ok(child.pid !== undefined, `could not start ${command}`);
  return child.pid;
}

it('a busy process and a sleeping one side by side: the busy one gets ≥ 90 % of their dynamic energy', async () => {
  // The loop runs in a child of the consumer's root: the tree reader has to find it (on kernels
  // without /proc/<pid>/task/<tid>/children, by scanning parent pids).
  const busyPid = start('sh', ['-c', 'sh -c "while :; do :; done" & wait']);
  const sleepingPid = start('sleep', ['60']);
  // Both have exec'd, and the loop runs in its own child, before their CPU time is sampled.
  const comm = (pid: number) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  const children = (pid: number) => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  assert.ok(
    await waitFor(() => comm(sleepingPid) === 'sleep' && children(busyPid) !== '', 30_000),
    'the busy loop and the sleeper did not start',
  );
  const root = new Sysroot('/');
  const topology = loadTopology(root);
  const numCpu = topology.numDomain(DomainType.Cpu);
  const packages: DeviceRef[] = Array.from(
    { length: topology.numDomain(DomainType.Package) },
    (_, index) => ({
      kind: 'package',
      domain: DomainType.Package,
      index,
    }),
  );
  const consumers = [
    openConsumer({ kind: 'pid-tree', pid: busyPid }, root),
    openConsumer({ kind: 'pid-tree', pid: sleepingPid }, root),
  ];
  const JOULES_PER_INTERVAL = 20;
  const read = (n: number): NodeReading => ({
    timeS: performance.now() / 1000,
    cpuTimes: readNodeCpuTimes(root, numCpu),
    energy: packages.map((device) => ({ device, totalJ: n * JOULES_PER_INTERVAL })),
    consumers: consumers.map((c) => ({ id: c.id, cpu: c.read() })),
  });

  const first = read(0);
  await sleep(1500);
  const second = read(1);
  const shares = attributeReadings(first, second, {
    topology,
    usPerTick: 1e6 / kernelClockTicks(),
    idlePolicy: 'none',
    idlePowerW: () => 5,
  });

  let busyUj = 0;
  let sleepingUj = 0;
  for (const s of shares) {
    assert.equal(s.status, 'ok');
    const m = s as MeasuredShares;
    assert.equal(m.consumers.reduce((a, c) => a + c.uj, 0) + m.unattributedUj + m.idleUj, m.measuredUj);
    assert.deepEqual(m.unknown, []);
    busyUj += m.consumers.find((c) => c.id === `pid:${busyPid}`)!.dynamicUj;
    sleepingUj += m.consumers.find((c) => c.id === `pid:${sleepingPid}`)!.dynamicUj;
  }
  const dynamicOfBoth = busyUj + sleepingUj;
  assert.ok(busyUj > 0, 'the busy process got no energy');
  // Other work on this shared machine is "other" (unattributed): the 90 % is of the two consumers' part.
  assert.ok(busyUj >= 0.9 * dynamicOfBoth, `busy ${busyUj} µJ, sleeping ${sleepingUj} µJ`);
});
