import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DomainType } from '../../src/platform/domains.js';
import { Sysroot } from '../../src/platform/sysroot.js';
import { loadTopology } from '../../src/platform/topology.js';
import { cpuPositions, generateTree } from '../fixtures/generate.js';
import { FIXTURES, tempDir } from '../helpers/tmp.js';

const fixture = (name: string) => loadTopology(new Sysroot(`${FIXTURES}${name}`));

describe('topology of fixture vm-1s4c (VM, no NUMA directory)', () => {
  const topo = fixture('vm-1s4c');
  it('has 1 package, 4 cores, 4 cpus and one memory domain holding every CPU', () => {
    assert.equal(topo.numDomain(DomainType.Board), 1);
    assert.equal(topo.numDomain(DomainType.Package), 1);
    assert.equal(topo.numDomain(DomainType.Core), 4);
    assert.equal(topo.numDomain(DomainType.Cpu), 4);
    assert.equal(topo.numDomain(DomainType.Memory), 1);
    assert.deepEqual(topo.cpusOf(DomainType.Memory, 0), [0, 1, 2, 3]);
    assert.deepEqual(topo.cpusOf(DomainType.Core, 2), [2]);
    assert.equal(topo.numDomain(DomainType.Gpu), 0);
  });
});

describe('topology of fixture server-2s4c2t (interleaved numbering)', () => {
  const topo = fixture('server-2s4c2t');
  it('has 2 packages, 8 cores, 16 cpus, 2 memory domains', () => {
    assert.equal(topo.numDomain(DomainType.Package), 2);
    assert.equal(topo.numDomain(DomainType.Core), 8);
    assert.equal(topo.numDomain(DomainType.Cpu), 16);
    assert.equal(topo.numDomain(DomainType.Memory), 2);
    assert.equal(topo.numDomain(DomainType.PackageIntegratedMemory), 0);
  });

  it('puts even CPUs in package 0 and odd CPUs in package 1, each with its NUMA node', () => {
    assert.deepEqual(topo.cpusOf(DomainType.Package, 0), [0, 2, 4, 6, 8, 10, 12, 14]);
    assert.deepEqual(topo.cpusOf(DomainType.Package, 1), [1, 3, 5, 7, 9, 11, 13, 15]);
    assert.deepEqual(topo.cpusOf(DomainType.Memory, 0), [0, 2, 4, 6, 8, 10, 12, 14]);
    assert.deepEqual(topo.cpusOf(DomainType.Memory, 1), [1, 3, 5, 7, 9, 11, 13, 15]);
  });

  it('pairs each core with its sibling thread 8 CPUs later; cores ordered by (package, core id)', () => {
    assert.deepEqual(topo.cpusOf(DomainType.Core, 0), [0, 8]);
    assert.deepEqual(topo.cpusOf(DomainType.Core, 1), [2, 10]);
    assert.deepEqual(topo.cpusOf(DomainType.Core, 4), [1, 9]);
    assert.deepEqual(topo.cpusOf(DomainType.Core, 7), [7, 15]);
    assert.equal(topo.parentIndex(DomainType.Cpu, 9, DomainType.Core), 4);
    assert.equal(topo.parentIndex(DomainType.Core, 5, DomainType.Package), 1);
    assert.deepEqual(topo.nested(DomainType.Core, DomainType.Package, 1), [4, 5, 6, 7]);
  });

  it('rejects out-of-range indices with the domain named', () => {
    assert.throws(() => topo.checkIndex(DomainType.Cpu, 16), /out of range for cpu \(16 indices\)/);
    assert.throws(() => topo.cpusOf(DomainType.Package, -1), /out of range/);
  });
});

describe('generated trees', () => {
  for (const numbering of ['interleaved', 'package-major'] as const) {
    it(`64 CPUs (${numbering}): every CPU lands in the package and core the generator put it in`, () => {
      const dir = tempDir();
      const shape = { packages: 2, coresPerPackage: 16, threadsPerCore: 2, numbering };
      generateTree(dir, shape);
      const topo = loadTopology(new Sysroot(dir));
      assert.equal(topo.numDomain(DomainType.Cpu), 64);
      assert.equal(topo.numDomain(DomainType.Core), 32);
      assert.equal(topo.numDomain(DomainType.Package), 2);
      for (const p of cpuPositions(shape)) {
        assert.equal(topo.parentIndex(DomainType.Cpu, p.cpu, DomainType.Package), p.pkg);
        assert.equal(topo.parentIndex(DomainType.Cpu, p.cpu, DomainType.Core), p.pkg * 16 + p.core);
        assert.equal(topo.parentIndex(DomainType.Cpu, p.cpu, DomainType.Memory), p.pkg);
      }
    });
  }
});
