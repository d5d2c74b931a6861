import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseCpuinfo, stickerFromModelName } from '../../../src/backends/cpuinfo/parse.js';
import { loadPlatform } from '../../../src/backends/load.js';
import { DomainType } from '../../../src/platform/domains.js';
import { Sysroot } from '../../../src/platform/sysroot.js';
import { copyFixture, FIXTURES } from '../../helpers/tmp.js';

const ARM64 = `processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd0c

processor\t: 1
BogoMIPS\t: 50.00
CPU implementer\t: 0x41
CPU part\t: 0xd0c
`;

const load = (root: string) => loadPlatform({ sysroot: new Sysroot(root), include: (n) => n === 'CPUINFO' });

describe('parseCpuinfo', () => {
  it('reads x86 identity and the marked frequency from the server fixture', () => {
    const info = parseCpuinfo(readFileSync(`${FIXTURES}server-2s4c2t/proc/cpuinfo`, 'utf8'));
    assert.equal(info.processors.length, 16);
    assert.equal(info.vendor, 'GenuineIntel');
    assert.equal(info.modelName, 'Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz');
    assert.equal(info.family, 6);
    assert.equal(info.model, 85);
    assert.equal(info.stepping, 4);
    assert.equal(info.stickerHz, 2.1e9);
    assert.ok(info.flags.includes('msr'));
    assert.equal(info.processors[15]!['physical id'], '1');
  });

  it('reads arm64 blocks, which have no model name or family', () => {
    const info = parseCpuinfo(ARM64);
    assert.equal(info.processors.length, 2);
    assert.equal(info.vendor, '0x41');
    assert.equal(info.modelName, undefined);
    assert.equal(info.family, undefined);
    assert.deepEqual(info.flags, ['fp', 'asimd', 'evtstrm', 'aes']);
  });

  it('takes the sticker only from an "@ x GHz/MHz" suffix', () => {
    assert.equal(stickerFromModelName('Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz'), 1.9e9);
    assert.equal(stickerFromModelName('Some CPU @ 800MHz'), 8e8);
    assert.equal(stickerFromModelName('AMD EPYC 7763 64-Core Processor'), undefined);
    assert.equal(parseCpuinfo('').processors.length, 0);
  });
});

describe('CPUINFO backend', () => {
  it('gives sticker, step and the cpufreq range as board constants, and metadata', async () => {
    const pio = await load(`${FIXTURES}server-2s4c2t`);
    assert.equal(await pio.readSignal('CPU_FREQUENCY_STICKER', DomainType.Board, 0), 2.1e9);
    assert.equal(await pio.readSignal('CPU_FREQUENCY_STEP', DomainType.Board, 0), 1e8);
    assert.equal(await pio.readSignal('CPUINFO::FREQ_MAX', DomainType.Board, 0), 3.7e9);
    assert.equal(await pio.readSignal('CPUINFO::MODEL', DomainType.Board, 0), 85);
    assert.equal(pio.signalInfo('CPUINFO::FREQ_MIN').aliasFor, undefined);
    assert.equal(pio.signalInfo('CPU_FREQUENCY_MIN_AVAIL').aliasFor, 'CPUINFO::FREQ_MIN');
    assert.deepEqual(pio.loadedBackends()[0]!.metadata(), {
      vendor: 'GenuineIntel',
      model_name: 'Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz',
      family: 6,
      model: 85,
      stepping: 4,
      logical_cpus: 16,
    });
  });

  it('on the VM says which constants it cannot know and why', async () => {
    const pio = await load(`${FIXTURES}vm-1s4c`);
    assert.deepEqual(pio.signalNames(), [
      'CPUINFO::FAMILY',
      'CPUINFO::FREQ_STEP',
      'CPUINFO::MODEL',
      'CPUINFO::STEPPING',
      'CPU_FREQUENCY_STEP',
    ]);
    const reasons = Object.fromEntries(pio.diagnostics().map((d) => [d.signal, d.reason]));
    assert.match(reasons['CPUINFO::FREQ_STICKER']!, /model name has no "@ x GHz"/);
    assert.match(reasons['CPUINFO::FREQ_MAX']!, /no cpufreq policy/);
  });

  it('falls back to intel_pstate base_frequency for the sticker', async () => {
    const root = copyFixture('server-2s4c2t');
    const cpuinfo = join(root, 'proc/cpuinfo');
    writeFileSync(cpuinfo, readFileSync(cpuinfo, 'utf8').replaceAll(' CPU @ 2.10GHz', ''));
    const pio = await load(root);
    assert.equal(await pio.readSignal('CPU_FREQUENCY_STICKER', DomainType.Board, 0), 2.1e9);
    rmSync(cpuinfo);
    const none = await load(root);
    assert.match(none.diagnostics().find((d) => d.backend === 'CPUINFO')!.reason, /proc\/cpuinfo not found/);
  });
});
