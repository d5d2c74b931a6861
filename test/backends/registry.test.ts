import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadPlatform } from '../../src/backends/load.js';
import { builtinTableOffers } from '../../src/backends/msr/tables.js';
import {
  type BackendRegistration,
  offersName,
  offersOf,
  registeredBackends,
} from '../../src/backends/registry.js';
import type { Backend } from '../../src/platform/backend.js';
import { DomainType } from '../../src/platform/domains.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { loadTopology } from '../../src/platform/topology.js';
import { generateTree } from '../fixtures/generate.js';
import { deactivateFakes, FakeGpu } from '../helpers/fake-gpu.js';
import { needsCompiler } from '../helpers/requirements.js';
import { copyFixture, FIXTURES, tempDir } from '../helpers/tmp.js';
import { putMsr } from './msr/helpers.js';

// A registration's `offers` is what lets `read CPU_ENERGY` on a node without RAPL say why. It is
// written by hand next to each backend, so these tests load every backend where its hardware is
// present and compare: a name a backend defines but does not offer would fall back to GEOPM's
// bare "no support" on the nodes that lack it; one offered but never defined is a typo.

after(deactivateFakes);

function registration(name: string): BackendRegistration {
  const reg = registeredBackends().find((r) => r.name === name);
  assert.ok(reg, `${name} is registered`);
  return reg;
}

/** A backend's high-level names (no `BACKEND::` prefix), as signals and as controls. */
function highLevel(b: Backend): { signals: string[]; controls: string[] } {
  const plain = (names: string[]) => names.filter((n) => !n.includes('::')).sort();
  return { signals: plain(b.signalNames()), controls: plain(b.controlNames()) };
}

/** The names a registration offers as signals (controls included: they read as signals too). */
function offeredSignals(reg: BackendRegistration): string[] {
  const { signals = [], controls = [] } = offersOf(reg);
  return [...new Set([...signals, ...controls])].sort();
}

function offeredControls(reg: BackendRegistration): string[] {
  return [...(offersOf(reg).controls ?? [])].sort();
}

test('every backend but MSR and HWMON offers exactly the names it defines on a node with all of it', {
  skip: needsCompiler(),
}, async () => {
  const root = tempDir();
  generateTree(root, { packages: 2, coresPerPackage: 2, threadsPerCore: 1 });
  cpSync(join(FIXTURES, 'energy/intel-2s/sys/class/powercap'), join(root, 'sys/class/powercap'), {
    recursive: true,
  });
  new FakeGpu('nvml', { device_count: 1 }).activate();
  new FakeGpu('amdsmi', { device_count: 1 }).activate();
  const pio = await loadPlatform({ sysroot: new Sysroot(root) });
  try {
    const loaded = pio.loadedBackends().map((b) => b.name);
    for (const name of ['TIME', 'CPUINFO', 'PROCFS', 'CPUFREQ', 'POWERCAP', 'NVML', 'AMDSMI'])
      assert.ok(loaded.includes(name), `${name} loaded: ${JSON.stringify(pio.diagnostics())}`);
    for (const b of pio.loadedBackends()) {
      const reg = registration(b.name);
      const defined = highLevel(b);
      assert.deepEqual(defined.signals, offeredSignals(reg), `${b.name} signals`);
      assert.deepEqual(defined.controls, offeredControls(reg), `${b.name} controls`);
    }
  } finally {
    await pio.close();
    deactivateFakes();
  }
});

test("MSR offers its built-in tables' aliases: what Intel and AMD nodes define, controls apart", async () => {
  const reg = registration('MSR');
  const defined = { signals: new Set<string>(), controls: new Set<string>() };
  for (const fixture of ['intel-2s', 'amd-epyc']) {
    const root = copyFixture(`energy/${fixture}`);
    const sysroot = new Sysroot(root);
    for (let cpu = 0; cpu < loadTopology(sysroot).numDomain(DomainType.Cpu); cpu++)
      putMsr(root, cpu, 0x10, 1n);
    const pio = await loadPlatform({ sysroot, include: (n) => n === 'MSR' });
    const msr = pio.loadedBackends().find((b) => b.name === 'MSR');
    assert.ok(msr, `${fixture}: MSR loaded: ${JSON.stringify(pio.diagnostics())}`);
    const names = highLevel(msr);
    for (const n of names.signals) {
      assert.ok(offersName(reg, 'signal', n), `${fixture}: MSR defines ${n}, not offered`);
      defined.signals.add(n);
    }
    for (const n of names.controls) {
      assert.ok(offersName(reg, 'control', n), `${fixture}: MSR control ${n}, not offered as one`);
      defined.controls.add(n);
    }
    await pio.close();
  }
  const offers = builtinTableOffers();
  assert.deepEqual(offeredSignals(reg), [...defined.signals].sort());
  assert.deepEqual(offers.controls, [...defined.controls].sort());
  // A signal-only name is not a control: write CPU_ENERGY keeps GEOPM's "no support for control".
  assert.equal(offersName(reg, 'control', 'CPU_ENERGY'), false);
  assert.equal(offersName(reg, 'signal', 'CPU_ENERGY'), true);
});
