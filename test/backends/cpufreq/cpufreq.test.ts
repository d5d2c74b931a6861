import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { discoverPolicies, parsePolicyCpus, parseSysfsNumber } from '../../../src/backends/cpufreq/parse.js';
import { loadPlatform } from '../../../src/backends/load.js';
import { DomainType } from '../../../src/platform/domains.js';
import { ParseError } from '../../../src/platform/errors.js';
import { Sysroot } from '../../../src/platform/sysroot.js';
import { spyOnFs } from '../../helpers/fs-spy.js';
import { copyFixture, FIXTURES, tempDir } from '../../helpers/tmp.js';

const POLICY = 'sys/devices/system/cpu/cpufreq/policy';
const policyFile = (root: string, policy: number, attr: string) => join(root, `${POLICY}${policy}`, attr);
const readKhz = (root: string, policy: number, attr: string) =>
  Number(readFileSync(policyFile(root, policy, attr), 'utf8'));
/** Policies of fixture server-2s4c2t: one per core, named after its first CPU (0..7); CPU c+8 is c's sibling. */
const POLICIES = [0, 1, 2, 3, 4, 5, 6, 7];

const load = (root: string, names = ['CPUFREQ']) =>
  loadPlatform({ sysroot: new Sysroot(root), include: (n) => names.includes(n) });

const countWrites = (fn: () => Promise<unknown>) => spyOnFs('writeFileSync', fn);

describe('cpufreq parsers', () => {
  it('discovers one policy per core with its two threads', () => {
    const policies = discoverPolicies(new Sysroot(`${FIXTURES}server-2s4c2t`));
    assert.deepEqual(
      policies.map((p) => [p.id, p.cpus]),
      POLICIES.map((p) => [p, [p, p + 8]]),
    );
  });

  it('finds no policy on the VM fixture', () => {
    assert.deepEqual(discoverPolicies(new Sysroot(`${FIXTURES}vm-1s4c`)), []);
  });

  it('parses numbers and cpu lists; words like <unknown> are ParseErrors naming the file', () => {
    assert.equal(parseSysfsNumber('2100000\n', 'f'), 2100000);
    assert.throws(
      () => parseSysfsNumber('<unknown>\n', '/sys/x/cpuinfo_cur_freq'),
      (e: Error) => e instanceof ParseError && e.message.startsWith('/sys/x/cpuinfo_cur_freq:'),
    );
    assert.deepEqual(parsePolicyCpus('0 8\n', 'f'), [0, 8]);
    assert.deepEqual(parsePolicyCpus('0-3\n', 'f'), [0, 1, 2, 3]);
    assert.throws(() => parsePolicyCpus('0 x', 'f'), /bad cpu list/);
  });
});

describe('CPUFREQ backend', () => {
  it('is unavailable on a VM without cpufreq, with the reason', async () => {
    const pio = await load(`${FIXTURES}vm-1s4c`);
    assert.equal(pio.loadedBackends().length, 0);
    assert.match(
      pio.diagnostics().find((d) => d.backend === 'CPUFREQ')!.reason,
      /no cpufreq policies under \/sys\/devices\/system\/cpu\/cpufreq nor \/sys\/devices\/system\/cpu\/cpu\*\/cpufreq \(VM without a cpufreq driver\?\)/,
    );
  });

  it('reads per-CPU cpuN/cpufreq directories where the kernel keeps no policyN', async () => {
    const root = copyFixture('server-2s4c2t');
    const cpuDir = join(root, 'sys/devices/system/cpu');
    const policies = discoverPolicies(new Sysroot(root));
    const expected = new Map<number, number>();
    for (const policy of policies) {
      const speed = Number(readFileSync(join(root, policy.dir, 'scaling_cur_freq'), 'utf8')) * 1000;
      for (const cpu of policy.cpus) {
        cpSync(join(root, policy.dir), join(cpuDir, `cpu${cpu}`, 'cpufreq'), { recursive: true });
        // Old kernels' related_cpus may name another CPU: the directory speaks for its own CPU.
        writeFileSync(join(cpuDir, `cpu${cpu}`, 'cpufreq', 'related_cpus'), '0\n');
        expected.set(cpu, speed);
      }
    }
    rmSync(join(cpuDir, 'cpufreq'), { recursive: true });
    assert.ok(expected.size > 1, 'the fixture has CPUs with cpufreq');
    const pio = await load(root);
    for (const [cpu, hz] of expected) {
      assert.equal(await pio.readSignal('CPUFREQ::SCALING_CUR_FREQ', DomainType.Cpu, cpu), hz, `cpu ${cpu}`);
    }
    await pio.close();
  });

  it('serves the policy files in Hz on the cpu domain, each CPU from its policy', async () => {
    const pio = await load(`${FIXTURES}server-2s4c2t`);
    assert.equal(pio.signalInfo('CPU_FREQUENCY_STATUS').aliasFor, 'CPUFREQ::SCALING_CUR_FREQ');
    assert.equal(pio.signalInfo('CPU_FREQUENCY_STATUS').domain, DomainType.Cpu);
    // policyN's scaling_cur_freq is 2400000 + N*1000 kHz in the fixture.
    assert.equal(await pio.readSignal('CPU_FREQUENCY_STATUS', DomainType.Cpu, 9), 2.401e9);
    assert.equal(await pio.readSignal('CPUFREQ::SCALING_CUR_FREQ', DomainType.Cpu, 8), 2.4e9);
    assert.equal(await pio.readSignal('CPU_FREQUENCY_MAX_AVAIL', DomainType.Board, 0), 3.7e9);
    assert.equal(await pio.readSignal('CPU_FREQUENCY_MIN_AVAIL', DomainType.Package, 1), 1e9);
    assert.equal(await pio.readSignal('CPUFREQ::CPUINFO_TRANSITION_LATENCY', DomainType.Cpu, 0), 20000e-9);
    assert.deepEqual(pio.controlNames(), [
      'CPUFREQ::SCALING_MAX_FREQ',
      'CPUFREQ::SCALING_MIN_FREQ',
      'CPU_FREQUENCY_MAX_CONTROL',
      'CPU_FREQUENCY_MIN_CONTROL',
    ]);
    const handles = [...Array(16).keys()].map((cpu) =>
      pio.pushSignal('CPU_FREQUENCY_STATUS', DomainType.Cpu, cpu),
    );
    const board = pio.pushSignal('CPU_FREQUENCY_STATUS', DomainType.Board, 0);
    await pio.readBatch();
    for (let cpu = 0; cpu < 16; cpu++)
      assert.equal(pio.sample(handles[cpu]!), (2400000 + (cpu % 8) * 1000) * 1000);
    assert.equal(pio.sample(board), 2403500000);
    await pio.close();
  });

  it('a garbled policy file gives NaN for its CPUs in a batch; a single read throws naming it', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    const h3 = pio.pushSignal('CPU_FREQUENCY_STATUS', DomainType.Cpu, 3);
    const h11 = pio.pushSignal('CPU_FREQUENCY_STATUS', DomainType.Cpu, 11);
    const h4 = pio.pushSignal('CPU_FREQUENCY_STATUS', DomainType.Cpu, 4);
    writeFileSync(policyFile(root, 3, 'scaling_cur_freq'), '<unknown>\n');
    await pio.readBatch();
    assert.ok(Number.isNaN(pio.sample(h3)));
    assert.ok(Number.isNaN(pio.sample(h11)));
    assert.equal(pio.sample(h4), 2.404e9);
    await assert.rejects(
      pio.readSignal('CPU_FREQUENCY_STATUS', DomainType.Cpu, 11),
      /policy3\/scaling_cur_freq: expected a number, found "<unknown>"/,
    );
    await pio.close();
  });

  it('a batch write to the board writes each policy file once, in kHz', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    const h = pio.pushControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Board, 0);
    pio.adjust(h, 2.5e9);
    const writes = await countWrites(() => pio.writeBatch());
    assert.equal(writes.length, 8, `one write per policy, got ${writes.join(', ')}`);
    for (const p of POLICIES) assert.equal(readKhz(root, p, 'scaling_max_freq'), 2500000);
    assert.equal(await pio.readSignal('CPU_FREQUENCY_MAX_CONTROL', DomainType.Board, 0), 2.5e9);
    // Nothing dirty: a second writeBatch writes nothing.
    assert.equal((await countWrites(() => pio.writeBatch())).length, 0);
    await pio.close();
  });

  it('a write to one package changes only the policies of that package', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    await pio.writeControl('CPU_FREQUENCY_MIN_CONTROL', DomainType.Package, 1, 2e9);
    for (const p of POLICIES)
      assert.equal(readKhz(root, p, 'scaling_min_freq'), p % 2 === 1 ? 2000000 : 1000000);
    await pio.close();
  });

  it('rejects settings outside cpuinfo min..max with a clear error and writes nothing', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    await assert.rejects(
      pio.writeControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 2, 5e9),
      /CPUFREQ::SCALING_MAX_FREQ: 5000000000 Hz is outside the 1000000000\.\.3700000000 Hz the hardware allows for CPU 2 \(policy2\)/,
    );
    const ok = pio.pushControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 0);
    const bad = pio.pushControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 1);
    pio.adjust(ok, 2e9);
    pio.adjust(bad, 0.5e9);
    const writes = await countWrites(() => assert.rejects(pio.writeBatch(), /500000000 Hz is outside/));
    assert.deepEqual(writes, []);
    for (const p of POLICIES) assert.equal(readKhz(root, p, 'scaling_max_freq'), 3700000);
    await pio.close();
  });

  it('refuses different settings for two CPUs of one policy in one batch and writes nothing', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    // CPUs 0 and 8 are the two threads of policy0: one file, so one of two settings would be lost.
    const cpu0 = pio.pushControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 0);
    const cpu8 = pio.pushControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 8);
    const cpu1 = pio.pushControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Cpu, 1);
    pio.adjust(cpu1, 2.2e9);
    pio.adjust(cpu0, 2e9);
    pio.adjust(cpu8, 2.1e9);
    const refused = await countWrites(() =>
      assert.rejects(
        pio.writeBatch(),
        /CPUFREQ::SCALING_MAX_FREQ: CPUs 0 and 8 share \/sys\/devices\/system\/cpu\/cpufreq\/policy0\/scaling_max_freq and were set to 2000000 and 2100000 kHz in one batch; nothing written/,
      ),
    );
    assert.deepEqual(refused, []);
    for (const p of POLICIES) assert.equal(readKhz(root, p, 'scaling_max_freq'), 3700000);
    // Agreeing settings are one write of the shared file.
    pio.adjust(cpu0, 2e9);
    pio.adjust(cpu8, 2e9);
    pio.adjust(cpu1, 2.2e9);
    assert.equal((await countWrites(() => pio.writeBatch())).length, 2);
    assert.equal(readKhz(root, 0, 'scaling_max_freq'), 2000000);
    assert.equal(readKhz(root, 1, 'scaling_max_freq'), 2200000);
    await pio.close();
  });

  it('save, change, restore through PlatformIO brings every policy file back', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    const saveDir = join(tempDir(), 'SAVE_FILES');
    await pio.saveControls(saveDir);
    const saved = JSON.parse(readFileSync(join(saveDir, 'CPUFREQ-save-control.json'), 'utf8'));
    assert.equal(saved.length, 32, 'two controls at 16 CPUs');
    assert.deepEqual(
      saved.find(
        (s: { name: string; domain_idx: number }) =>
          s.name === 'CPUFREQ::SCALING_MIN_FREQ' && s.domain_idx === 9,
      ),
      { name: 'CPUFREQ::SCALING_MIN_FREQ', domain_type: DomainType.Cpu, domain_idx: 9, setting: 1e9 },
    );
    await pio.writeControl('CPU_FREQUENCY_MAX_CONTROL', DomainType.Board, 0, 1.5e9);
    await pio.writeControl('CPU_FREQUENCY_MIN_CONTROL', DomainType.Board, 0, 1.2e9);
    assert.equal(readKhz(root, 5, 'scaling_max_freq'), 1500000);
    await pio.restoreControls(saveDir);
    for (const p of POLICIES) {
      assert.equal(readKhz(root, p, 'scaling_max_freq'), 3700000);
      assert.equal(readKhz(root, p, 'scaling_min_freq'), 1000000);
    }
    await pio.close();
  });

  it('wins over CPUINFO for CPU_FREQUENCY_*_AVAIL; CPUINFO serves them when CPUFREQ is left out', async () => {
    const both = await load(`${FIXTURES}server-2s4c2t`, ['CPUFREQ', 'CPUINFO']);
    assert.equal(both.signalInfo('CPU_FREQUENCY_MAX_AVAIL').backend, 'CPUFREQ');
    assert.equal(both.signalInfo('CPU_FREQUENCY_STICKER').backend, 'CPUINFO');
    const infoOnly = await load(`${FIXTURES}server-2s4c2t`, ['CPUINFO']);
    assert.equal(infoOnly.signalInfo('CPU_FREQUENCY_MAX_AVAIL').backend, 'CPUINFO');
    assert.equal(await infoOnly.readSignal('CPU_FREQUENCY_MAX_AVAIL', DomainType.Board, 0), 3.7e9);
    assert.equal(await infoOnly.readSignal('CPU_FREQUENCY_MIN_AVAIL', DomainType.Board, 0), 1e9);
    await both.close();
    await infoOnly.close();
  });
});
