import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadPlatform } from '../../../src/backends/load.js';
import { wholeDisks } from '../../../src/backends/procfs/index.js';
import {
  busyFraction,
  parseDiskstats,
  parseMeminfo,
  parseNetDev,
  parseProcStat,
} from '../../../src/backends/procfs/parse.js';
import { DomainType } from '../../../src/platform/domains.js';
import { ParseError } from '../../../src/platform/errors.js';
import { availableSensors, getSensors } from '../../../src/platform/sensors.js';
import { Sysroot } from '../../../src/platform/sysroot.js';
import { spyOnFs } from '../../helpers/fs-spy.js';
import { copyFixture, FIXTURES } from '../../helpers/tmp.js';

const SERVER = `${FIXTURES}server-2s4c2t`;
const read = (rel: string) => readFileSync(join(SERVER, rel), 'utf8');

/** Adds ticks to one cpu line of a /proc/stat text: [user, idle] added to columns 1 and 4. */
function addTicks(text: string, cpu: number | 'all', user: number, idle: number): string {
  const prefix = cpu === 'all' ? 'cpu ' : `cpu${cpu} `;
  return text
    .split('\n')
    .map((line) => {
      if (!line.startsWith(prefix)) return line;
      const f = line.split(/\s+/);
      f[1] = String(Number(f[1]) + user);
      f[4] = String(Number(f[4]) + idle);
      return f.join(' ');
    })
    .join('\n');
}

describe('procfs parsers', () => {
  it('parseProcStat: busy and total ticks per CPU and for the cpu line', () => {
    const t = parseProcStat(read('proc/stat'), 16);
    // cpu0: user 10000 nice 20 system 3000 idle 90000 iowait 150 irq 0 softirq 40 steal 5
    assert.equal(t.busy[0], 13065);
    assert.equal(t.total[0], 13065 + 90150);
    assert.equal(
      t.allTotal,
      [...t.total].reduce((a, b) => a + b, 0),
    );
    assert.equal(
      t.allBusy,
      [...t.busy].reduce((a, b) => a + b, 0),
    );
  });

  it('parseProcStat: CPUs without a line are NaN, garbled lines are ParseErrors naming the file', () => {
    const t = parseProcStat('cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 1\n', 3);
    assert.equal(t.total[0], 10);
    assert.ok(Number.isNaN(t.total[1]!));
    assert.throws(
      () => parseProcStat('cpu  1 2 x 4\n', 1, '/proc/stat'),
      (e: Error) => e instanceof ParseError && /\/proc\/stat: bad number/.test(e.message),
    );
    assert.throws(() => parseProcStat('cpu  1 2\n', 1), /too few columns/);
    assert.throws(() => parseProcStat('garbage\n', 1), /no "cpu" line/);
    assert.throws(() => parseProcStat('', 1), /no "cpu" line/);
  });

  it('busyFraction: exact fraction, NaN when no time passed or counters went back', () => {
    assert.equal(busyFraction(100, 1000, 130, 1100), 0.3);
    assert.equal(busyFraction(100, 1000, 100, 1100), 0);
    assert.ok(Number.isNaN(busyFraction(100, 1000, 100, 1000)));
    assert.ok(Number.isNaN(busyFraction(100, 1000, 50, 900)));
  });

  it('parseMeminfo: bytes, used = total - available, MemAvailable fallback for old kernels', () => {
    const m = parseMeminfo(read('proc/meminfo'));
    assert.equal(m.totalBytes, 32594688 * 1024);
    assert.equal(m.availableBytes, 28000000 * 1024);
    assert.equal(m.usedBytes, (32594688 - 28000000) * 1024);
    const old = parseMeminfo('MemTotal: 100 kB\nMemFree: 10 kB\nBuffers: 5 kB\nCached: 20 kB\n');
    assert.equal(old.availableBytes, 35 * 1024);
    assert.throws(() => parseMeminfo('MemFree: 1 kB\n', '/proc/meminfo'), /\/proc\/meminfo: no MemTotal/);
  });

  it('parseDiskstats: 512-byte sectors for every device line', () => {
    const d = parseDiskstats(read('proc/diskstats'));
    assert.deepEqual(
      d.map((x) => x.name),
      ['loop0', 'ram0', 'sda', 'sda1', 'sda2', 'nvme0n1', 'nvme0n1p1', 'dm-0'],
    );
    assert.deepEqual(d[2], { name: 'sda', readBytes: 20000 * 512, writeBytes: 40000 * 512 });
    assert.throws(() => parseDiskstats('8 0 sda 1 2\n'), /too few columns/);
  });

  it('wholeDisks: /sys/block entries with a device, so no partitions, loop, ram or dm', () => {
    assert.deepEqual([...wholeDisks(new Sysroot(SERVER))].sort(), ['nvme0n1', 'sda']);
  });

  it('parseNetDev: rx/tx bytes per interface, names glued to counters accepted', () => {
    const n = parseNetDev(read('proc/net/dev'));
    assert.deepEqual(
      n.map((x) => x.name),
      ['lo', 'eth0', 'ib0'],
    );
    assert.deepEqual(n[1], { name: 'eth0', rxBytes: 123456789, txBytes: 98765432 });
    const glued = parseNetDev(`a|b\nc|d\neth1:99 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n`);
    assert.deepEqual(glued[0], { name: 'eth1', rxBytes: 99, txBytes: 7 });
    assert.throws(() => parseNetDev('no header\n'), /missing header/);
  });
});

describe('PROCFS backend', () => {
  const load = (root: string) => loadPlatform({ sysroot: new Sysroot(root), include: (n) => n === 'PROCFS' });

  it('computes exact utilisation from two batches, per CPU and aggregated to package and board', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    const perCpu = [...Array(16).keys()].map((cpu) => pio.pushSignal('CPU_UTILIZATION', DomainType.Cpu, cpu));
    const board = pio.pushSignal('CPU_UTILIZATION', DomainType.Board, 0);
    const pkg0 = pio.pushSignal('CPU_UTILIZATION', DomainType.Package, 0);
    const total = pio.pushSignal('PROCFS::CPU_UTILIZATION_TOTAL', DomainType.Board, 0);
    await pio.readBatch();
    assert.ok(Number.isNaN(pio.sample(perCpu[0]!)), 'a rate has no value after one batch');
    let text = readFileSync(join(root, 'proc/stat'), 'utf8');
    // CPU i: 5*i busy ticks out of 100 → utilisation i/20.
    for (let cpu = 0; cpu < 16; cpu++) text = addTicks(text, cpu, 5 * cpu, 100 - 5 * cpu);
    text = addTicks(text, 'all', 600, 1000);
    writeFileSync(join(root, 'proc/stat'), text);
    await pio.readBatch();
    for (let cpu = 0; cpu < 16; cpu++) assert.equal(pio.sample(perCpu[cpu]!), (5 * cpu) / 100);
    assert.ok(Math.abs(pio.sample(board) - 0.375) < 1e-12);
    assert.ok(Math.abs(pio.sample(pkg0) - 0.35) < 1e-12, 'package 0 holds the even CPUs');
    assert.equal(pio.sample(total), 600 / 1600);
    await pio.close();
  });

  it('a batch within one clock tick (same counters) has no new value: the last one stands', async () => {
    const root = copyFixture('vm-1s4c');
    const pio = await load(root);
    const cpu1 = pio.pushSignal('CPU_UTILIZATION', DomainType.Cpu, 1);
    const board = pio.pushSignal('CPU_UTILIZATION', DomainType.Board, 0);
    const total = pio.pushSignal('PROCFS::CPU_UTILIZATION_TOTAL', DomainType.Board, 0);
    const all = () => [cpu1, board, total].map((h) => pio.sample(h));
    const stat = join(root, 'proc/stat');
    const tick = (busy: number, idle: number) => {
      let text = readFileSync(stat, 'utf8');
      for (let cpu = 0; cpu < 4; cpu++) text = addTicks(text, cpu, busy, idle);
      writeFileSync(stat, addTicks(text, 'all', 4 * busy, 4 * idle));
    };
    await pio.readBatch();
    // Second batch in the same tick: there is no value yet (NaN), and nothing failed.
    await pio.readBatch();
    for (const v of all()) assert.ok(Number.isNaN(v), `${v} before any tick`);
    tick(1, 3);
    await pio.readBatch();
    assert.deepEqual(all(), [0.25, 0.25, 0.25]);
    // Same counters again (two reads inside one tick): the previous value stands, not NaN.
    await pio.readBatch();
    assert.deepEqual(all(), [0.25, 0.25, 0.25]);
    tick(3, 1);
    await pio.readBatch();
    assert.deepEqual(all(), [0.75, 0.75, 0.75]);
    await pio.close();
  });

  it('reads /proc/stat once per batch however many CPU signals are pushed', async () => {
    const pio = await load(copyFixture('server-2s4c2t'));
    for (let cpu = 0; cpu < 16; cpu++) pio.pushSignal('CPU_UTILIZATION', DomainType.Cpu, cpu);
    pio.pushSignal('PROCFS::CPU_UTILIZATION_TOTAL', DomainType.Board, 0);
    const reads = await spyOnFs('readSync', async () => {
      await pio.readBatch();
      // A single read in between reads its own file and leaves the batch plan alone.
      assert.equal(await pio.readSignal('PROCFS::MEMORY_TOTAL', DomainType.Board, 0), 32594688 * 1024);
      await pio.readBatch();
    });
    assert.equal(
      reads.length,
      3,
      'one pread of /proc/stat per batch, one of /proc/meminfo for the single read',
    );
    await pio.close();
  });

  it('counts whole disks and all interfaces but lo; counters follow the files exactly', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    const names = [
      'DISK_READ_BYTES',
      'DISK_WRITE_BYTES',
      'NET_RX_BYTES',
      'NET_TX_BYTES',
      'MEMORY_USED',
      'MEMORY_TOTAL',
    ];
    const h = names.map((n) => pio.pushSignal(`PROCFS::${n}`, DomainType.Board, 0));
    await pio.readBatch();
    assert.deepEqual(
      h.map((x) => pio.sample(x)),
      [
        (20000 + 300000) * 512,
        (40000 + 500000) * 512,
        123456789 + 1000000,
        98765432 + 2000000,
        (32594688 - 28000000) * 1024,
        32594688 * 1024,
      ],
    );
    // Traffic on a partition only (already counted in its disk) and on lo must not move the counters.
    const disk = readFileSync(join(root, 'proc/diskstats'), 'utf8');
    writeFileSync(
      join(root, 'proc/diskstats'),
      disk
        .replace(' sda1 100 5 15000 ', ' sda1 100 5 99999 ')
        .replace(' sda 100 5 20000 ', ' sda 100 5 20010 '),
    );
    const net = readFileSync(join(root, 'proc/net/dev'), 'utf8');
    writeFileSync(
      join(root, 'proc/net/dev'),
      net.replace('lo: 777777', 'lo: 888888').replace('eth0: 123456789', 'eth0: 123456799'),
    );
    await pio.readBatch();
    assert.equal(pio.sample(h[0]!), (20010 + 300000) * 512);
    assert.equal(pio.sample(h[2]!), 123456799 + 1000000);
    await pio.close();
  });

  it('a garbled file gives NaN in a batch for its signals only; a single read throws naming the file', async () => {
    const root = copyFixture('server-2s4c2t');
    const pio = await load(root);
    const used = pio.pushSignal('PROCFS::MEMORY_USED', DomainType.Board, 0);
    const rx = pio.pushSignal('PROCFS::NET_RX_BYTES', DomainType.Board, 0);
    writeFileSync(join(root, 'proc/meminfo'), 'MemFree: lots\n');
    await pio.readBatch();
    assert.ok(Number.isNaN(pio.sample(used)));
    assert.equal(pio.sample(rx), 124456789);
    await assert.rejects(
      pio.readSignal('PROCFS::MEMORY_USED', DomainType.Board, 0),
      /\/proc\/meminfo: no MemTotal line/,
    );
    writeFileSync(join(root, 'proc/stat'), 'cpu  1 2 oops 4\n');
    await assert.rejects(pio.readSignal('CPU_UTILIZATION', DomainType.Cpu, 0), /\/proc\/stat: bad number/);
    await pio.close();
  });

  it('a single read of a rate measures over the window stated in its description (real /proc)', async () => {
    const pio = await load('');
    const info = pio.signalInfo('PROCFS::CPU_UTILIZATION_TOTAL');
    assert.match(info.description, /a single read measures over 0\.1 s/);
    const t0 = performance.now();
    const v = await pio.readSignal('PROCFS::CPU_UTILIZATION_TOTAL', DomainType.Board, 0);
    assert.ok(performance.now() - t0 >= 95, 'the read waited for its window');
    assert.ok(v >= 0 && v <= 1, `utilisation ${v} is a fraction`);
    await pio.close();
  });

  it('is unavailable with the reason when /proc/stat is missing', async () => {
    const root = copyFixture('vm-1s4c');
    rmSync(join(root, 'proc/stat'));
    const p2 = await load(root);
    assert.deepEqual(
      p2.loadedBackends().map((b) => b.name),
      [],
    );
    assert.match(p2.diagnostics().find((d) => d.backend === 'PROCFS')!.reason, /proc\/stat not found/);
  });

  it('disk bytes are unavailable, with the reason, when /sys/block holds only virtual devices', async () => {
    const root = copyFixture('server-2s4c2t');
    for (const disk of wholeDisks(new Sysroot(root)))
      rmSync(join(root, 'sys/block', disk, 'device'), { recursive: true });
    const pio = await load(root);
    assert.equal(
      pio.isValidSignal('PROCFS::DISK_READ_BYTES'),
      false,
      'no sum over no disk (it would read 0)',
    );
    assert.equal(pio.isValidSignal('PROCFS::MEMORY_USED'), true, 'the other sources stay');
    const why = pio.diagnostics().filter((d) => d.signal?.startsWith('PROCFS::DISK_'));
    assert.equal(why.length, 2);
    for (const d of why) assert.match(d.reason, /no entry of \/sys\/block has a device link/);
    await pio.close();
  });

  it('disk bytes count the whole disks diskstats lists, and are unavailable when it lists none', async () => {
    const root = copyFixture('server-2s4c2t');
    const diskstats = join(root, 'proc/diskstats');
    const lines = readFileSync(diskstats, 'utf8').split('\n');
    const lineOf = (name: string) => lines.filter((l) => l.trim().split(/\s+/)[2] === name);
    const sectorsRead = (name: string) => Number(lineOf(name)[0]!.trim().split(/\s+/)[5]);
    // Only sda listed among the whole disks: the sum is sda's alone, and metadata says so.
    writeFileSync(diskstats, lines.filter((l) => !l.includes('nvme0n1')).join('\n'));
    const some = await load(root);
    assert.equal(
      await some.readSignal('PROCFS::DISK_READ_BYTES', DomainType.Board, 0),
      sectorsRead('sda') * 512,
    );
    assert.deepEqual(some.loadedBackends()[0]!.metadata().whole_disks, ['sda']);
    await some.close();
    // No whole disk listed (a capture whose sysfs and procfs come from different machines).
    writeFileSync(diskstats, lines.filter((l) => !/ (sda|nvme0n1)\b/.test(l)).join('\n'));
    const none = await load(root);
    assert.equal(none.isValidSignal('PROCFS::DISK_READ_BYTES'), false);
    const why = none.diagnostics().find((d) => d.signal === 'PROCFS::DISK_WRITE_BYTES');
    assert.match(why?.reason ?? '', /none of the whole disks of \/sys\/block .* is in \/proc\/diskstats/);
    await none.close();
  });

  it('derives perun sensors: per-CPU utilisation as cpu, memory as ram, disk and net', async () => {
    const pio = await load(`${FIXTURES}vm-1s4c`);
    const backend = pio.loadedBackends()[0]!;
    const sensors = availableSensors(backend, pio.topology);
    assert.deepEqual(sensors['PROCFS::CPU_UTILIZATION-cpu-3'], ['procfs', 'cpu', '']);
    assert.deepEqual(sensors['PROCFS::MEMORY_USED'], ['procfs', 'ram', '']);
    assert.deepEqual(sensors['PROCFS::DISK_READ_BYTES'], ['procfs', 'disk', '']);
    assert.deepEqual(sensors['PROCFS::NET_TX_BYTES'], ['procfs', 'net', '']);
    assert.equal(sensors.CPU_UTILIZATION, undefined, 'aliases are not listed twice');
    assert.equal(Object.keys(sensors).filter((k) => k.startsWith('PROCFS::CPU_UTILIZATION-cpu-')).length, 4);
    const [mem] = getSensors(backend, pio.topology, ['PROCFS::MEMORY_TOTAL']);
    assert.equal(await mem!.read(), 32594688 * 1024);
    await pio.close();
  });
});
